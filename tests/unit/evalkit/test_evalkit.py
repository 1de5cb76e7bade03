"""The benchmark job's pure pieces: its settings from the plan's argv (our template's `evalkit` section and the
official recipe's top-level keys), the suites it finds, and the scores it reads out of lm-eval's results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from starforge.benchmarks import BUILTIN_ROOT
from starforge.evalkit._config import load_config
from starforge.evalkit._harness import CPU_AUTO_BATCH, batch_size, call_arguments
from starforge.evalkit._main import main
from starforge.evalkit._scores import scores_of
from starforge.evalkit._suites import Chosen, choose
from starforge.runner._hydra import hydra_value

TEMPLATE = Path(__file__).resolve().parents[3] / "src/starforge/recipes/builtin/evalkit/benchmark/template/config.yaml"


def test_the_template_with_the_plans_overrides() -> None:
    argv = ["--config", str(TEMPLATE), f"evalkit.suites={hydra_value('basic-arithmetic,basic-choice')}",
            "evalkit.limit=10", "evalkit.repeat=3", "evalkit.seed=7", "model.path=/models/tiny"]
    config, problems = load_config(argv, {})
    assert problems == [] and config is not None
    assert config.suites == ("basic-arithmetic", "basic-choice")
    assert (config.limit, config.num_fewshot, config.repeat, config.model, config.dtype) == (10, 0, 3, "/models/tiny",
                                                                                            "bfloat16")
    assert config.seeds() == [7, 8, 9]
    assert call_arguments(config, 8) == {"limit": 10, "num_fewshot": 0, "log_samples": False, "random_seed": 8,
                                         "numpy_random_seed": 8, "torch_random_seed": 8, "fewshot_random_seed": 8}


def test_the_official_layout_top_level_keys_and_extra_args(tmp_path: Path) -> None:
    empty = tmp_path / "config.yaml"
    empty.write_text("{}\n")
    argv = ["--config", str(empty), "suites=basic-choice", "runner=lm-eval", "limit=5",
            "extra_args=--num_fewshot 2 --seed=3"]
    config, problems = load_config(argv, {"FORGE_MODEL": "/models/m", "FORGE_INIT_FROM": "/ckpt/step_9"})
    assert problems == [] and config is not None
    assert (config.suites, config.limit, config.num_fewshot, config.seed) == (("basic-choice",), 5, 2, 3)
    assert config.model == "/ckpt/step_9"  # a checkpoint of an earlier run is what is evaluated
    cli, problems = load_config(["--suites", "basic-choice", "--limit", "4"], {"FORGE_MODEL": "org/m"})
    assert problems == [] and cli is not None and (cli.suites, cli.limit, cli.model) == (("basic-choice",), 4, "org/m")


def test_bad_settings_are_all_named() -> None:
    config, problems = load_config(["runner=lighteval", "evalkit.repeat=0", "limit=-1", "extra_args=--device cuda",
                                    "report=../x.json"], {})
    assert config is None
    text = "\n".join(problems)
    for part in ("suites is empty", "runner 'lighteval'", "repeat must be", "limit must be", "--device is not",
                 "no model", "report '../x.json'"):
        assert part in text, (part, problems)


def test_suites_come_from_the_mounted_packs_else_the_builtin_pack() -> None:
    mounted = json.dumps([{"suite": "quiz", "task": "quiz_task", "pack": "ann/quiz", "version": "2",
                           "metrics": ["acc"], "path": "/inputs/bench-ann-quiz"}])
    assert choose(["quiz"], {"FORGE_BENCHMARKS": mounted}) == (
        [Chosen("quiz", "quiz_task", "ann/quiz", "2", ("acc",), "/inputs/bench-ann-quiz")], [])
    chosen, problems = choose(["basic-choice"], {})
    assert problems == [] and chosen[0].path == str(BUILTIN_ROOT) and chosen[0].pack == "starforge/basic"
    builtin = json.dumps([{"suite": "basic-choice", "task": "basic_choice", "pack": "starforge/basic",
                           "version": "1.0.0", "metrics": ["acc"], "builtin": True, "path": ""}])
    assert choose(["basic-choice"], {"FORGE_BENCHMARKS": builtin})[0][0].path == str(BUILTIN_ROOT)
    assert choose([], {"FORGE_BENCHMARKS": mounted})[0][0].suite == "quiz"  # the console chose: every suite mounted
    chosen, problems = choose(["basic-choice"], {"FORGE_BENCHMARKS": mounted})
    assert chosen == [] and "no suite basic-choice in the packs the console mounted (offered: quiz)" in problems[0]


def test_scores_are_read_from_lm_evals_metric_keys() -> None:
    chosen = [Chosen("sums", "sums_task", "p", "1", ("exact_match",), "/p"),
              Chosen("pick", "pick_task", "p", "1", ("acc", "acc_norm"), "/p")]
    results = {"/p": {"sums_task": {"exact_match,strict": 0.5, "exact_match_stderr,strict": 0.1},
                      "pick_task": {"acc,none": 0.25, "acc_stderr,none": "N/A", "alias": "pick_task"}},
               "/q": {"sums_task": {"exact_match,strict": 0.75}}}
    scores, missing = scores_of(results, chosen, 2)
    assert scores == [{"benchmark": "sums", "metric": "exact_match", "value": 0.5, "repeat": 2, "stderr": 0.1},
                      {"benchmark": "pick", "metric": "acc", "value": 0.25, "repeat": 2}]
    assert missing == ["pick/acc_norm"]


def test_the_job_refuses_bad_settings_before_evaluating_anything(capsys: pytest.CaptureFixture[str],
                                                                 tmp_path: Path) -> None:
    assert main(["--config", str(TEMPLATE), "evalkit.suites=gsm8k", "model.path=/m"],
                {"FORGE_OUT_DIR": str(tmp_path)}) == 2
    err = capsys.readouterr().err
    assert "no suite gsm8k in the builtin pack (offered: basic-arithmetic, basic-choice)" in err
    assert "nothing was evaluated" in err and not list(tmp_path.iterdir())


def test_the_official_clients_hyperparameters_reach_the_job_through_our_plan(tmp_path: Path) -> None:
    """What the official client 0.3.56's `sf bench run` sets (runner, suites, limit, batch_size, extra_args) goes
    through our recipe's plan into the argv our job reads."""
    import shutil

    from starforge.console.scheduler import compile_plan
    from starforge.contract import parse
    from starforge.recipes import load_catalog, validate_hyperparams
    from starforge.runner import build_command
    from starforge.wire import parse_plan
    from tests.unit.recipes.trees import spec

    recipe = load_catalog(overlays=False).get("evalkit/benchmark")
    assert recipe is not None
    work = tmp_path / "work"
    shutil.copytree(recipe.template_dir, work / "experiments" / "exp")
    official = {"runner": "lm-eval", "suites": "basic-arithmetic,basic-choice", "batch_size": "4", "limit": 5,
                "extra_args": "--num_fewshot 2"}
    hyperparams, problems = validate_hyperparams(official, recipe, recipe.default_version)
    assert problems == []
    parsed = parse(spec(recipe, hyperparams=hyperparams))
    assert parsed.spec is not None, parsed.problems
    plan = compile_plan(parsed.spec, recipe, run_id="r-0123456789", work=work)
    again, _ = parse_plan(json.loads(json.dumps(plan.to_dict())))
    assert again is not None
    argv, _result = build_command(again, "/runtime/bin/python", {"FORGE_MODEL": "/models/tiny"})
    assert argv[3] == "starforge.evalkit"
    config, problems = load_config([a.replace("experiments/exp", str(work / "experiments/exp")) for a in argv[4:]],
                                   {"FORGE_MODEL": "/models/tiny"})
    assert problems == [] and config is not None
    assert (config.suites, config.limit, config.batch_size, config.num_fewshot, config.model) == (
        ("basic-arithmetic", "basic-choice"), 5, "4", 2, "/models/tiny")


def test_auto_batching_probes_only_on_a_gpu() -> None:
    assert [batch_size(s, "cpu") for s in ("auto", "auto:4", "16")] == [CPU_AUTO_BATCH, CPU_AUTO_BATCH, 16]
    assert [batch_size(s, "cuda:0") for s in ("auto", "auto:4", "16")] == ["auto", "auto:4", 16]

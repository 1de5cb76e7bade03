"""The config-mode adapter: merged documents, precedence, bindings, data split links, and forge-launch writing them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from starforge.runner import adapt_config
from starforge.wire import SPLITS_DIR, WRITTEN_CONFIG_FILE, ConfigPlan, InputBinding, Override

from .conftest import Job, launch_plan

TRL_BINDINGS = (
    InputBinding("model", "model_name_or_path"),
    InputBinding("train_data", "dataset_name"),
    InputBinding("validation_data", "dataset_name"),
    InputBinding("checkpoint_dir", "output_dir"),
)


def trl_plan(**changes: object) -> ConfigPlan:
    fields: dict[str, object] = {
        "mode": "trl-yaml", "path": "experiments/x/config.yaml",
        "overrides": (Override("learning_rate", 2e-5),),
        "document": {"model_name_or_path": "Qwen/base", "dataset_name": "hub/data", "output_dir": "checkpoints",
                     "learning_rate": 1.0e-3, "bf16": False, "eval_strategy": "no", "reward_funcs": ["a.b"]},
        "bindings": TRL_BINDINGS,
    }
    fields.update(changes)
    return ConfigPlan(**fields)  # type: ignore[arg-type]


def test_trl_config_layers_document_then_overrides_then_job_inputs(tmp_path: Path) -> None:
    train = tmp_path / "train.JSONL"
    train.write_text("{}\n")
    env = {"FORGE_MODEL": "/models/m", "FORGE_TRAIN_DATA": str(train), "FORGE_OUT_DIR": "/job/out/"}
    adapted = adapt_config(trl_plan(), env)
    assert adapted.args == ("--config", WRITTEN_CONFIG_FILE)
    assert yaml.safe_load(adapted.files[WRITTEN_CONFIG_FILE]) == {
        "model_name_or_path": "/models/m", "dataset_name": SPLITS_DIR, "output_dir": "/job/out/checkpoints",
        "learning_rate": 2e-5, "bf16": False, "eval_strategy": "no", "reward_funcs": ["a.b"],
    }
    assert adapted.links == {f"{SPLITS_DIR}/train/train.JSONL": str(train)}  # no validation data: no test split


def test_an_input_the_job_lacks_leaves_the_experiment_setting() -> None:
    adapted = adapt_config(trl_plan(), {})
    written = yaml.safe_load(adapted.files[WRITTEN_CONFIG_FILE])
    assert (written["model_name_or_path"], written["dataset_name"], written["output_dir"]) == (
        "Qwen/base", "hub/data", "checkpoints")
    assert adapted.links == {}


def test_a_data_folder_is_linked_file_by_file(tmp_path: Path) -> None:
    folder = tmp_path / "val"
    (folder / "more").mkdir(parents=True)
    (folder / "a.parquet").write_bytes(b"x")
    (folder / "more" / "b.parquet").write_bytes(b"y")
    (folder / ".hidden").write_text("no")
    adapted = adapt_config(trl_plan(), {"FORGE_VAL_DATA": str(folder), "FORGE_TRAIN_DATA": "/data/t.csv.gz"})
    assert adapted.links == {
        f"{SPLITS_DIR}/train/t.csv.gz": "/data/t.csv.gz",
        f"{SPLITS_DIR}/test/a.parquet": str(folder / "a.parquet"),
        f"{SPLITS_DIR}/test/more/b.parquet": str(folder / "more" / "b.parquet"),
    }


def test_argv_modes_render_the_merged_document() -> None:
    document = {"data": {"train_files": "~/d.parquet", "n": 2}, "trainer": {"logger": ["console"]}, "flag": False}
    plan = ConfigPlan("hydra-overrides", "", (Override("data.n", 4),), document,
                      (InputBinding("train_data", "data.train_files"),))
    assert adapt_config(plan, {"FORGE_TRAIN_DATA": "/d/t.parquet"}).args == (
        "data.train_files=/d/t.parquet", "data.n=4", "trainer.logger=[console]", "flag=false")
    flags = ConfigPlan("cli-flags", "", (), {"pretrain": "m", "flash_attn": True, "load_in_4bit": False,
                                               "target_modules": ["q", "v"], "note": None})
    assert adapt_config(flags, {}).args == ("--pretrain", "m", "--flash_attn", "--target_modules", "q", "v")


def test_option_modes_append_overrides_then_bindings() -> None:
    plan = ConfigPlan("dot-overrides", "e/config.yaml", (Override("policy.lr", 1e-06),),
                      None, (InputBinding("model", "policy.model_name"), InputBinding("checkpoint_dir", "ckpt")))
    assert adapt_config(plan, {"FORGE_MODEL": "/m", "FORGE_OUT_DIR": "/o"}).args == (
        "policy.lr=1e-06", "policy.model_name=/m", "ckpt=/o/checkpoints")


def test_forge_launch_writes_the_config_and_links_the_data_before_starting(job: Job, tmp_path: Path) -> None:
    train = tmp_path / "pairs.jsonl"
    train.write_text('{"prompt": "p"}\n')
    config = trl_plan().to_dict()
    (job.workdir / ".starforge" / "launch.json").write_text(
        json.dumps(launch_plan(argv=["{python}", "job.py"], config=config)), encoding="utf-8")
    job.env["FORGE_TRAIN_DATA"] = str(train)
    result = job.launch()
    assert result.returncode == 0, result.stderr
    assert job.seen()["argv"] == ["--config", WRITTEN_CONFIG_FILE]
    written = yaml.safe_load((job.workdir / WRITTEN_CONFIG_FILE).read_text())
    assert written["dataset_name"] == SPLITS_DIR and written["output_dir"] == f"{job.out_dir}/checkpoints"
    link = job.workdir / SPLITS_DIR / "train" / "pairs.jsonl"
    assert link.is_symlink() and link.read_text() == '{"prompt": "p"}\n'


def test_a_second_start_leaves_no_stale_split(job: Job, tmp_path: Path) -> None:
    train, val = tmp_path / "t.jsonl", tmp_path / "v.jsonl"
    train.write_text("{}\n")
    val.write_text("{}\n")
    config = trl_plan().to_dict()
    (job.workdir / ".starforge" / "launch.json").write_text(
        json.dumps(launch_plan(argv=["{python}", "job.py"], config=config)), encoding="utf-8")
    job.env.update(FORGE_TRAIN_DATA=str(train), FORGE_VAL_DATA=str(val))
    assert job.launch().returncode == 0
    assert (job.workdir / SPLITS_DIR / "test" / "v.jsonl").is_symlink()
    del job.env["FORGE_VAL_DATA"]
    assert job.launch().returncode == 0
    assert sorted(p.name for p in (job.workdir / SPLITS_DIR).iterdir()) == ["train"]


def test_forge_launch_never_writes_through_a_link_the_job_planted(job: Job, tmp_path: Path) -> None:
    train = tmp_path / "t.jsonl"
    train.write_text("{}\n")
    plan = json.dumps(launch_plan(argv=["{python}", "job.py"], config=trl_plan().to_dict()))
    (job.workdir / ".starforge" / "launch.json").write_text(plan, encoding="utf-8")
    job.env.update(FORGE_TRAIN_DATA=str(train))
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "train").mkdir(parents=True)
    (elsewhere / "train" / "keep.txt").write_text("precious")
    (job.workdir / SPLITS_DIR).parent.mkdir(parents=True, exist_ok=True)
    (job.workdir / SPLITS_DIR).symlink_to(elsewhere)  # the job's code replaced the data folder by a link
    assert job.launch().returncode == 0  # the link itself is removed, never what it points at
    assert (elsewhere / "train" / "keep.txt").read_text() == "precious"
    assert not (job.workdir / SPLITS_DIR).is_symlink() and (job.workdir / SPLITS_DIR / "train").is_dir()

    outside = tmp_path / "outside"  # now the whole `.starforge` folder is a link: nothing is written through it
    outside.mkdir()
    for name in ("launch.json", "jobspec.json"):
        shutil.copy(job.workdir / ".starforge" / name, outside / name)
    shutil.rmtree(job.workdir / ".starforge")
    (job.workdir / ".starforge").symlink_to(outside)
    done = job.launch()
    assert done.returncode != 0 and b"is a link" in done.stderr + done.stdout
    assert sorted(p.name for p in outside.iterdir()) == ["jobspec.json", "launch.json"]

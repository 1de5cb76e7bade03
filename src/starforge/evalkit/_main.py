"""The benchmark job's steps: read the settings, run the suites `repeat` times, write `eval/report.json`, register it
and report the scores. Exit status: 0 done, 2 bad settings (nothing run), 1 the evaluation failed."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..runner import report
from ..runner._ingest import IngestError
from ..wire import PATH_BENCHMARK
from ._config import EvalConfig, load_config
from ._scores import scores_of
from ._suites import BENCHMARKS_VARIABLE, Chosen, choose

__all__ = ["REPORT_VERSION", "main", "report_document"]

_PROG = "starforge.evalkit"
REPORT_VERSION = "starforge/eval-report/v1"
RUNNER = "lm-eval"


def _say(text: str) -> None:
    print(f"{_PROG}: {text}", flush=True)


def report_document(config: EvalConfig, chosen: Sequence[Chosen], scores: list[dict[str, Any]],
                    results: list[dict[str, Any]], harness_version: str, device: str,
                    batch_size: int | str) -> dict[str, Any]:
    """Return the content of `eval/report.json`: what ran, on what, and every score of every repetition."""
    return {
        "version": REPORT_VERSION, "runner": RUNNER, "runner_version": harness_version, "model": config.model,
        "device": device, "dtype": config.dtype, "limit": config.limit, "num_fewshot": config.num_fewshot,
        "batch_size": batch_size, "max_new_tokens": config.max_new_tokens, "repeat": config.repeat,
        "seeds": config.seeds(),
        "suites": [{"suite": c.suite, "task": c.task, "pack": c.pack, "version": c.version,
                    "metrics": list(c.metrics)} for c in chosen],
        "scores": scores, "results": results,
    }


def _send(run: report.Run, model: str, scores: list[dict[str, Any]]) -> None:
    if run.client is None:
        _say("ingest is off (STARFORGE_ENABLED is not 1): the scores stay in the report")
        return
    try:
        answer = run.client.post(PATH_BENCHMARK, {"runner": RUNNER, "model": model, "scores": scores})
    except IngestError as exc:
        _say(f"warning: the console did not take the scores ({exc}); they stay in the report")
        return
    _say(f"{len(scores)} scores sent to the console{f' ({answer})' if answer else ''}")


class _Failed(Exception):
    """The evaluation ran but did not give what the suites declare."""


def _repetitions(harness: Any, config: EvalConfig, chosen: Sequence[Chosen],
                 run: report.Run) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Evaluate `repeat` times; return every score and lm-eval's results per repetition (by suite); log each
    repetition's scores as metrics `bench/<suite>/<metric>` and their mean as `eval/score`."""
    scores: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for k, seed in enumerate(config.seeds()):
        found = harness.evaluate(chosen, seed)
        got, missing = scores_of(found, chosen, k)
        if missing:
            raise _Failed(f"lm-eval reported no {', '.join(missing)} (it reported "
                          f"{json.dumps(found, default=str)[:2000]})")
        results.append({c.suite: found.get(c.path, {}).get(c.task) for c in chosen})
        scores += got
        points = {f"bench/{s['benchmark']}/{s['metric']}": s["value"] for s in got}
        run.log({**points, "eval/score": sum(points.values()) / len(points)}, step=k)
        for s in got:
            _say(f"repeat {k} (seed {seed}): {s['benchmark']} {s['metric']} = {s['value']:.4f}")
    return scores, results


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run the benchmark job with `argv` (default: the command line) and `environ`; return the exit status."""
    env = dict(os.environ if environ is None else environ)
    config, problems = load_config(sys.argv[1:] if argv is None else argv, env)
    chosen: list[Chosen] = []
    if config is not None:
        chosen, problems = choose(config.suites, env)
    if config is None or problems:
        for problem in problems:
            print(f"{_PROG}: error: {problem}", file=sys.stderr)
        print(f"{_PROG}: {len(problems)} problem(s); nothing was evaluated", file=sys.stderr)
        return 2
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):  # a pack carries its data: nothing is downloaded
        os.environ.setdefault(key, "1")
    out_dir = Path(env.get("FORGE_OUT_DIR") or "out")
    run = report.init(environ={**env, "FORGE_OUT_DIR": str(out_dir)})
    from . import _harness

    _say(f"lm-eval {_harness.harness_version()} on {config.model}: {', '.join(c.suite for c in chosen)}, "
         f"limit={config.limit or 'all'}, repeat={config.repeat}, seeds={config.seeds()}")
    where = "chosen by the console" if env.get(BENCHMARKS_VARIABLE) else "the builtin pack of this StarForge"
    for c in chosen:
        _say(f"{c.suite}: task {c.task} of {c.pack}@{c.version}, {where} ({c.path})")
    run.hparams(dataclasses.asdict(config))
    try:
        harness = _harness.Harness(config)
        _say(f"model loaded on {harness.device}, batch size {harness.batch_size}")
        scores, results = _repetitions(harness, config, chosen, run)
    except _Failed as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # lm-eval's, transformers' or torch's own: its traceback, then one line saying so
        traceback.print_exc()
        print(f"{_PROG}: error: the evaluation failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    path = out_dir / config.report
    path.parent.mkdir(parents=True, exist_ok=True)
    document = report_document(config, chosen, scores, results, _harness.harness_version(), harness.device,
                               harness.batch_size)
    path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    run.artifact("eval_report", path, format="json")
    _send(run, env.get("FORGE_MODEL") or config.model, scores)
    run.finish()
    _say(f"report written to {path}")
    return 0

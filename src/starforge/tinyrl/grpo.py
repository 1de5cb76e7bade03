"""Entry point `python -m starforge.tinyrl.grpo --config FILE [dotted.path=value ...]`: train with GRPO, checkpoint.

Reads `FORGE_OUT_DIR` (default `./out`), `FORGE_INIT_FROM` (a checkpoint to start from), `FORGE_RESUME_FROM` (a
checkpoint of this run to resume exactly, at its step + 1; it wins over both ways of starting from a checkpoint) and
`DOCS_DIR`; prints one line per step and reports `train/*` metrics through `starforge.runner.report`. On SIGUSR1 or
when `$FORGE_PREEMPT_FILE` exists (the console asks the job to checkpoint and stop), it saves a checkpoint at the end
of the current step and exits 0. Exit status: 0 on success or such a stop, 2 on a bad config or an unusable
checkpoint to start or resume from.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from starforge.tinyrl._checkpoint import Checkpoint, CheckpointError, load_checkpoint
from starforge.tinyrl._config import TrainConfig, load_config
from starforge.tinyrl._grpo import StepStats
from starforge.tinyrl._task import AdditionTask
from starforge.tinyrl._trainer import resume_problem, train

__all__ = ["main"]

_PROG = "python -m starforge.tinyrl.grpo"


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Train one tinyrl GRPO run from the command line and return the process exit status."""
    env = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(prog=_PROG, description="Train a tiny policy with GRPO on a toy addition task.")
    parser.add_argument("--config", required=True, type=Path, help="the experiment's config.yaml")
    parser.add_argument("overrides", nargs="*", metavar="dotted.path=value", help="config overrides")
    args = parser.parse_args(argv)

    config, problems = load_config(args.config, args.overrides)
    if config is None:
        for problem in problems:
            print(f"{_PROG}: config error: {problem}", file=sys.stderr)
        print(f"{_PROG}: {len(problems)} problem(s) in {args.config} and its overrides; nothing was run", file=sys.stderr)
        return 2

    from starforge.runner import preempt, report

    out_dir = Path(env.get("FORGE_OUT_DIR") or "out")
    initial: np.ndarray | None = None
    resume: Checkpoint | None = None
    point = preempt.resume_point(env)
    init_from = config.init_from.strip() or env.get("FORGE_INIT_FROM", "").strip()  # the recipe key wins
    if point is not None:  # a later attempt of this run: its own checkpoint wins over where the run started from
        resume = _load_resume(Path(point.path), config, point.attempt)
        if resume is None:
            return 2
    elif init_from:
        loaded = _load_initial(Path(init_from), config)
        if loaded is None:
            return 2
        initial = loaded
    docs = env.get("DOCS_DIR", "").strip()
    if docs:
        print(f"reference corpus mounted at {docs} (the addition task does not read it)", flush=True)
    model = env.get("FORGE_MODEL", "").strip()
    if model and os.path.isdir(model):  # a registered or cluster-path base model; the policy here is its own
        files = ", ".join(sorted(os.listdir(model))[:20])
        print(f"base model mounted at {model} ({files}; the addition task does not read it)", flush=True)

    report.init(environ={**env, "FORGE_OUT_DIR": str(out_dir)})
    report.hparams(config.flat())
    print(
        f"tinyrl grpo: {config.max_num_steps} steps, {config.num_prompts_per_step} prompts x "
        f"{config.num_generations_per_prompt} generations, optimizer {config.optimizer} lr={config.learning_rate:g}, "
        f"kl_penalty={config.kl_penalty:g}, seed={config.seed}, out={out_dir}",
        flush=True,
    )

    def on_step(step: int, stats: StepStats) -> None:
        print(
            f"step {step}/{config.max_num_steps} reward={stats.reward:.2f} loss={stats.loss:.4f} "
            f"kl={stats.kl:.4f} entropy={stats.entropy:.3f}",
            flush=True,
        )
        report.log(
            {
                "train/reward": stats.reward,
                "train/loss": stats.loss,
                "train/kl_penalty": stats.kl,
                "train/entropy": stats.entropy,
            },
            step=step,
        )

    def on_checkpoint(step: int, path: Path) -> None:
        print(f"saved checkpoint {path}", flush=True)

    watch = preempt.PreemptWatch(env)
    watch.install()
    started = time.monotonic()
    try:
        result = train(config, out_dir, initial_weights=initial, resume=resume, should_stop=watch.requested,
                       on_step=on_step, on_checkpoint=on_checkpoint)
    finally:
        watch.uninstall()
        report.finish()
    if result.interrupted_at is not None:
        step = result.interrupted_at
        print(f"checkpoint at step {step}, stopping: the console asked (a later attempt resumes at step {step + 1})",
              flush=True)
    final = result.history[-1].reward if result.history else 0.0
    print(
        f"done: {len(result.history)} steps in {time.monotonic() - started:.2f}s, final reward {final:.2f}, "
        f"{len(result.checkpoints)} checkpoint(s) under {out_dir / 'checkpoints'}",
        flush=True,
    )
    return 0


def _load_resume(path: Path, config: TrainConfig, attempt: int | None) -> Checkpoint | None:
    try:
        checkpoint = load_checkpoint(path)
    except CheckpointError as exc:
        print(f"{_PROG}: FORGE_RESUME_FROM: {exc}", file=sys.stderr)
        return None
    problem = resume_problem(checkpoint, config)
    if problem:
        print(f"{_PROG}: FORGE_RESUME_FROM: {problem}", file=sys.stderr)
        return None
    which = f" (attempt {attempt})" if attempt is not None else ""
    if checkpoint.step >= config.max_num_steps:
        print(f"resuming from {checkpoint.directory}{which}: step {checkpoint.step} is already the last "
              f"(grpo.max_num_steps={config.max_num_steps}); nothing left to train", flush=True)
    else:
        print(f"resuming from {checkpoint.directory}{which}: continuing at step {checkpoint.step + 1} of "
              f"{config.max_num_steps}", flush=True)
    return checkpoint


def _misfit(checkpoint: Checkpoint, config: TrainConfig) -> str:
    task = AdditionTask(config.max_operand)
    expected = (task.n_features, task.n_actions)
    if checkpoint.weights.shape == expected:
        return ""
    return (f"{checkpoint.directory} holds weights of shape {checkpoint.weights.shape}, "
            f"but task.max_operand={config.max_operand} needs {expected}")


def _load_initial(path: Path, config: TrainConfig) -> np.ndarray | None:
    try:
        checkpoint = load_checkpoint(path)
    except CheckpointError as exc:
        print(f"{_PROG}: FORGE_INIT_FROM: {exc}", file=sys.stderr)
        return None
    problem = _misfit(checkpoint, config)
    if problem:
        print(f"{_PROG}: FORGE_INIT_FROM: {problem}", file=sys.stderr)
        return None
    print(
        f"initialising from {checkpoint.directory} (step {checkpoint.step}, reward {checkpoint.reward:.2f})",
        flush=True,
    )
    return checkpoint.weights


if __name__ == "__main__":
    sys.exit(main())

"""`make demo-trl`: TRL supervised fine-tuning end to end on this machine's CPU, with the commands people type.

An operator starts a console on loopback (a temporary state folder, SQLite, the local executor) whose configuration
lists a models folder in `model_roots`, and pre-builds the TRL runtime (`sf console runtime build trl-1.10.0`: a
venv in the user cache with TRL and torch's CPU build, reused by later runs). A tiny Llama-style model is built from
a config with that runtime's interpreter (random weights, a tokenizer trained on the fly: nothing is downloaded).
A researcher then pushes the training data with `sf dataset push`, creates a `trl/sft` experiment (the template as
shipped), submits it with the CPU command of its README (`--model <the model's folder> --train-dataset <the pushed
ref> … --set bf16=false --set max_steps=20`), follows the logs, prints the loss metrics and downloads the trained
model with `sf job artifacts --download`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from demo import BIN, GREEN, RESET, SF, free_port, run, start_console, step  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CPU_FLAGS = ["--set", "bf16=false", "--set", "max_steps=20"]  # the trl/sft template's README: its CPU command


def main() -> int:
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="starforge-demo-trl-"))
    env = {**os.environ, "FORGE_HOME": str(tmp / "forge-home"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("FORGE_SERVER", None)
    models = tmp / "models"
    models.mkdir()
    config = tmp / "console.yaml"
    config.write_text(yaml.safe_dump({"model_roots": [str(models)]}), encoding="utf-8")

    step("Pre-build the TRL runtime (once per machine: later runs reuse it)")
    built = json.loads(run([SF, "console", "runtime", "build", "trl-1.10.0", "--kind", "cpu", "--config",
                            str(config), "--json"], cwd=tmp, env=env, capture=True))
    step("Build a tiny Llama-style model from a config, and example datasets (nothing is downloaded)")
    run([built["interpreter"], str(ROOT / "scripts" / "tiny_model.py"), str(models / "tiny-llama"), "--data",
         str(tmp / "data")], cwd=tmp, env=env)

    port = free_port()
    step(f"Start a console on 127.0.0.1:{port} with model_roots: [{models}]")
    (tmp / "state").mkdir()
    console, token = start_console(tmp / "state", port, env, config)
    try:
        step("Create a lab, log in, push the training and validation data")
        run([SF, "init", "demo-lab", "--yes"], cwd=tmp, env=env)
        lab = tmp / "demo-lab"
        run([SF, "login", "--server", f"http://127.0.0.1:{port}", "--token", token], cwd=lab, env=env)
        pushed = json.loads(run([SF, "dataset", "push", str(tmp / "data" / "sft.jsonl"), "chat@1", "--json"],
                                cwd=lab, env=env, capture=True))
        held_out = json.loads(run([SF, "dataset", "push", str(tmp / "data" / "sft-val.jsonl"), "chat-val@1", "--json"],
                                  cwd=lab, env=env, capture=True))
        run([SF, "dataset", "ls"], cwd=lab, env=env)

        step("Create a trl/sft experiment from its template, and commit it")
        run([SF, "new", "tiny-sft", "--method", "trl/sft"], cwd=lab, env=env)
        run(["git", "add", "-A"], cwd=lab, env=env)
        run(["git", "-c", "user.name=demo", "-c", "user.email=demo@example.com", "commit", "-qm", "tiny-sft"],
            cwd=lab, env=env)

        step("Submit it with the model's folder, the pushed datasets and the template's CPU flags, and follow it")
        out = run([SF, "submit", "tiny-sft", "--profile", "cpu:1", "--model", str(models / "tiny-llama"),
                   "--train-dataset", pushed["ref"], "--val-dataset", held_out["ref"], *CPU_FLAGS], cwd=lab, env=env,
                  capture=True)
        job = re.search(r"r-[0-9a-z]{10}", out)
        assert job, out
        run([SF, "job", "logs", job.group(0)], cwd=lab, env=env)
        run([SF, "job", "metrics", job.group(0)], cwd=lab, env=env)

        step("Its artifacts, and the trained model downloaded")
        run([SF, "job", "artifacts", job.group(0)], cwd=lab, env=env)
        run([SF, "job", "artifacts", job.group(0), "--download", str(tmp / "downloaded")], cwd=lab, env=env)
        run(["ls", "-R", str(tmp / "downloaded")], cwd=lab, env=env)
    finally:
        step("Stop the console")
        console.terminate()
        console.wait(timeout=30)
    print(f"\n{GREEN}TRL demo finished in {time.monotonic() - started:.0f} s: a tiny model fine-tuned by TRL's "
          f"SFT trainer on this machine's CPU, its model downloaded.{RESET}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

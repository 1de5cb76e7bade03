"""`make demo`: the main StarForge path on this machine, using only what is built so far."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SF = str(Path(sys.executable).with_name("sf"))
sys.path.insert(0, str(REPO))

from tests.specs import minimal_spec  # noqa: E402


def step(title: str) -> None:
    print(f"\n\033[1m== {title}\033[0m", flush=True)


def main() -> int:
    step("A forge/v2 JobSpec, checked by the shared contract")
    spec = minimal_spec()
    result = subprocess.run([SF, "spec", "check", "-", "--no-catalog"], input=json.dumps(spec), text=True)
    if result.returncode != 0:
        return 1
    step("A spec with several problems: every one is named at its field, with a hint")
    spec["spec"]["source"]["entrypoint"] = "python train.py"
    spec["spec"]["resources"]["pools"] = []
    spec["spec"]["data"] = {"corpus": "/mnt/shared/docs"}
    result = subprocess.run([SF, "spec", "check", "-", "--no-catalog"], input=json.dumps(spec), text=True)
    if result.returncode != 1:
        return 1
    print("\ndemo finished: the parts built so far work end to end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

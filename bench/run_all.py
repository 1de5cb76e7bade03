"""Run every benchmark under bench/ and print its figures against targets (`make bench`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted(p for p in BENCH.glob("*.py") if p.name != "run_all.py" and not p.name.startswith("_"))
    failed = []
    for script in scripts:
        print(f"\n=== {script.stem} ===", flush=True)
        if subprocess.run([sys.executable, str(script)], cwd=BENCH.parent).returncode != 0:
            failed.append(script.stem)
    if failed:
        print(f"\nbenchmarks that could not run: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Run every benchmark under bench/ and print its figures against targets (`make bench`)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def main() -> int:
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    scripts = sorted(p for p in BENCH.glob("*.py") if p.name != "run_all.py" and not p.name.startswith("_"))
    failed = []
    for script in scripts:
        print(f"\n=== {script.stem} ===", flush=True)
        if subprocess.run([sys.executable, str(script)], cwd=BENCH.parent).returncode != 0:
            failed.append(script.stem)
    _summary(started)
    if failed:
        print(f"\nbenchmarks that could not run: {', '.join(failed)}")
        return 1
    return 0


def _summary(started: str) -> None:
    """Print every figure this run recorded in bench/results/latest.json: name, target, measured, verdict."""
    results = BENCH / "results" / "latest.json"
    figures = json.loads(results.read_text()) if results.is_file() else {}
    rows = [(name, f) for name, f in sorted(figures.items()) if str(f.get("at", "")) >= started]
    if not rows:
        return
    print(f"\n=== summary ({results.relative_to(BENCH.parent)}) ===")
    width = max(len(name) for name, _ in rows)
    for name, figure in rows:
        measured = ", ".join(f"{key} {figure[key]}" for key in ("rps", "p50_ms", "p99_ms", "storm_rps", "non_2xx", "floor_rps",
                                                              "floor_p99_ms", "median_s", "max_s", "median_cpu_s")
                             if key in figure)
        print(f"{name:<{width}}  target {figure.get('target', ''):<30} {measured:<48} "
              f"{'MEETS' if figure.get('meets') else 'MISSES'}")


if __name__ == "__main__":
    raise SystemExit(main())

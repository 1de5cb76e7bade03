"""Benchmark: contract parse + validate of a realistic JobSpec, in specs/second on one core (target ≥ 20,000)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.specs import minimal_spec, rich_spec  # noqa: E402

from starforge.contract import loads, parse  # noqa: E402

TARGET_PER_SECOND = 20_000


def measure(doc: object, seconds: float = 2.0) -> float:
    """Return parses per second of `doc`, best of three windows."""
    best = 0.0
    for _ in range(3):
        count = 0
        start = time.perf_counter()
        deadline = start + seconds / 3
        while True:
            for _ in range(200):
                parse(doc)
            count += 200
            now = time.perf_counter()
            if now >= deadline:
                break
        best = max(best, count / (now - start))
    return best


def main() -> int:
    results = {}
    for name, doc in (("realistic (rich) spec", rich_spec()), ("minimal spec", minimal_spec())):
        assert parse(doc).ok
        rate = measure(doc)
        results[name] = rate
        print(f"contract parse+validate, {name}: {rate:,.0f} specs/s ({1e6 / rate:.1f} µs each)")
    text = json.dumps(rich_spec())
    rate = measure(loads(text))
    start = time.perf_counter()
    for _ in range(2000):
        parse(loads(text))
    with_json = 2000 / (time.perf_counter() - start)
    print(f"  including JSON decoding: {with_json:,.0f} specs/s")
    rich = results["realistic (rich) spec"]
    verdict = "MEETS" if rich >= TARGET_PER_SECOND else "MISSES"
    print(f"target ≥ {TARGET_PER_SECOND:,} specs/s on one core: {verdict} ({rich:,.0f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

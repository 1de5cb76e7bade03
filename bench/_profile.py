"""Profile a real console under load: hey drives it while py-spy samples it; print where its active time goes.

Usage: python bench/_profile.py admission|submit [CLIENTS] [SECONDS]   (not part of `make bench`)
PROFILE_POSTGRES=1 profiles a console on a fresh PostgreSQL database (`scripts/services.sh up`) instead of SQLite.
Active samples only (threads waiting on a queue, a condition or the selector are left out); each line is the share of
active samples whose stack passes through that function (inclusive).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._console import start_console  # noqa: E402
from bench._load import require_hey  # noqa: E402
from tests.integration.helpers import bundle, spec_for  # noqa: E402

IDLE = ("Condition.wait", "Queue.get", "select (", "Event.wait", "sleep (", "epoll")
OURS_AND_LIBRARIES = ("starforge/", "sqlalchemy/", "starlette/", "fastapi/", "uvicorn/", "anyio/", "json/")


def _top(raw: Path, count: int = 30) -> list[tuple[float, str]]:
    total, inclusive = 0, Counter[str]()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if any(key in frames[-1] for key in IDLE):
            continue
        total += int(n)
        names = set()
        for frame in frames:
            function, _, where = frame.partition(" (")
            if any(part in where for part in OURS_AND_LIBRARIES):
                names.add(f"{function} ({where.split('site-packages/')[-1].split('src/')[-1].split(':')[0]})")
        for name in names:
            inclusive[name] += int(n)
    return [(100 * n / max(1, total), name) for name, n in inclusive.most_common(count)]


def main(kind: str, clients: int, seconds: float) -> int:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    database_url = ""
    if os.environ.get("PROFILE_POSTGRES"):
        from tests.conftest import _service_env
        from tests.integration.conftest import _postgres_database

        database_url = _postgres_database(os.environ.get("STARFORGE_TEST_POSTGRES_URL")
                                          or _service_env()["STARFORGE_TEST_POSTGRES_URL"])
    console, tmp = start_console({"capacity": {"cpu": 2}, "quota": {"max_concurrent_jobs": 1_000_000,
                                                                      "max_concurrent_gpus": 1_000_000}},
                                 database_url=database_url)
    try:
        token = console.token_for("profile")
        with console.client(token) as api:
            series = "cpu" if kind == "admission" else "h200"
            spec = spec_for(api, "tinyrl/grpo", exp="experiments/bench", series=series)
        body = Path(tempfile.mkdtemp(dir=tmp.name)) / "body"
        headers = [f"Authorization: Bearer {token}"]
        if kind == "admission":
            url = f"{console.url}/api/admission/check"
            body.write_text(json.dumps({"spec": spec, "profile": "cpu"}))
            headers.append("Content-Type: application/json")
        else:
            url = f"{console.url}/api/jobs"
            body.write_bytes(bundle({"experiments/bench/config.yaml": "grpo: {}\n"}))
            meta = {"exp": "experiments/bench", "profile": "h200", "git_commit": "3f2a9c1", "git_dirty": False,
                    "config_sha": "none", "spec": spec}
            headers += ["Content-Type: application/gzip", f"X-Forge-Meta: {json.dumps(meta, ensure_ascii=True)}"]
        argv = [require_hey(), "-z", f"{seconds + 2}s", "-c", str(clients), "-m", "POST", "-D", str(body)]
        for header in headers:
            argv += ["-H", header]
        load = subprocess.Popen([*argv, url], stdout=subprocess.DEVNULL)
        time.sleep(1)
        raw = Path(tmp.name) / "profile.txt"
        subprocess.run([py_spy, "record", "-d", str(int(seconds)), "-r", "200", "-p", str(console.proc.pid),
                        "-f", "raw", "-o", str(raw), "--nonblocking", *(["--gil"] if os.environ.get("PROFILE_GIL") else [])], capture_output=True, check=True)
        load.wait()
        if keep := os.environ.get("PROFILE_RAW"):
            shutil.copy(raw, keep)
        for share, name in _top(raw):
            print(f"{share:5.1f}%  {name}")
    finally:
        console.stop()
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] not in ("admission", "submit"):
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(args[0], int(args[1]) if len(args) > 1 else 16, float(args[2]) if len(args) > 2 else 8))

"""`make demo`: the main StarForge job end to end on this machine, with the commands a researcher types.

A console starts on loopback with a temporary state directory (SQLite, local executor); a lab is created, logged
in, and the CPU recipe `tinyrl/grpo` is submitted with `--profile cpu:1` and followed until it succeeds (reward
rising). A second job starts from the first run's checkpoint (`--init-from`), the JobSpec that was sent and the job
list are printed, and the console is stopped.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
SF = str(BIN / "sf")
BOLD, DIM, GREEN, RED, RESET = ("\033[1m", "\033[2m", "\033[32m", "\033[31m", "\033[0m") if sys.stdout.isatty() \
    else ("", "", "", "", "")


def step(title: str) -> None:
    print(f"\n{BOLD}== {title}{RESET}", flush=True)


def run(args: list[str], *, cwd: Path, env: dict[str, str], capture: bool = False) -> str:
    """Show and run a command; stop the demo with its output if it fails."""
    shown = " ".join(shlex.quote(a) for a in ["sf", *args[1:]] if a) if args[0] == SF else shlex.join(args)
    print(f"{DIM}$ {shown}{RESET}", flush=True)
    result = subprocess.run(args, cwd=cwd, env=env, text=True, capture_output=capture)
    if capture:
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
    if result.returncode != 0:
        print(f"{RED}demo failed: `{shown}` exited {result.returncode}{RESET}", file=sys.stderr)
        raise SystemExit(1)
    return result.stdout if capture else ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_console(state: Path, port: int, env: dict[str, str],
                  config: Path | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start `sf console up` on loopback (with the YAML `config` when given) and return it with its admin token."""
    log = (state.parent / "console.log").open("w")
    extra: list[str] = ["--config", str(config)] if config else []
    if shutil.which("bwrap") is None:  # a laptop without bubblewrap: run the demo's jobs unsandboxed, and say so
        print("note: bubblewrap is not installed, so this demo runs its jobs WITHOUT the job sandbox "
              "(install Debian's bubblewrap for the real thing)", flush=True)
        config = config or state.parent / "console.yaml"
        text = config.read_text(encoding="utf-8") if config.is_file() else ""
        config.write_text(text + "executors:\n  local:\n    sandbox: off\n", encoding="utf-8")
        extra = ["--config", str(config)]
    proc = subprocess.Popen([SF, "console", "up", "--host", "127.0.0.1", "--port", str(port), "--state-dir",
                             str(state), *extra], stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    assert proc.stdout is not None
    token = proc.stdout.readline().rsplit(" ", 1)[-1].strip()
    import urllib.request

    for _ in range(300):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/version", timeout=1):
                return proc, token
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the console did not start; see " + str(state.parent / "console.log"))


def main() -> int:
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="starforge-demo-"))
    env = {**os.environ, "FORGE_HOME": str(tmp / "forge-home"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("FORGE_SERVER", None)
    port = free_port()
    step(f"Start a console on 127.0.0.1:{port} (SQLite + local executor in {tmp / 'state'})")
    (tmp / "state").mkdir()
    console, token = start_console(tmp / "state", port, env)
    try:
        step("Create a lab and log in")
        run([SF, "init", "demo-lab", "--yes"], cwd=tmp, env=env)
        lab = tmp / "demo-lab"
        run([SF, "login", "--server", f"http://127.0.0.1:{port}", "--token", token], cwd=lab, env=env)

        step("Create an experiment from the CPU recipe tinyrl/grpo and commit it")
        run([SF, "new", "my-rl", "--method", "tinyrl/grpo"], cwd=lab, env=env)
        run([SF, "validate", "my-rl"], cwd=lab, env=env)
        run(["git", "add", "-A"], cwd=lab, env=env)
        run(["git", "-c", "user.name=demo", "-c", "user.email=demo@example.com", "commit", "-qm", "my-rl"],
            cwd=lab, env=env)

        step("Submit it on one CPU slot and follow its logs until it ends")
        out = run([SF, "submit", "my-rl", "--profile", "cpu:1", "--set", "max_num_steps=60"], cwd=lab, env=env,
                  capture=True)
        first = re.search(r"r-[0-9a-z]{10}", out)
        assert first, out
        run([SF, "job", "logs", first.group(0)], cwd=lab, env=env)
        run([SF, "job", "metrics", first.group(0)], cwd=lab, env=env)

        step("A second job that starts from the first run's checkpoint")
        out = run([SF, "submit", "my-rl", "--profile", "cpu:1", "--set", "max_num_steps=20",
                   "--init-from", f"run/{first.group(0)}/checkpoint"], cwd=lab, env=env, capture=True)
        second = re.search(r"r-[0-9a-z]{10}", out)
        assert second, out
        run([SF, "job", "logs", second.group(0)], cwd=lab, env=env)

        step("The JobSpec that was sent, and the jobs")
        run(["cat", ".starforge/jobspec.json"], cwd=lab, env=env)
        run([SF, "job", "ls"], cwd=lab, env=env)
    finally:
        step("Stop the console")
        console.terminate()
        console.wait(timeout=30)
    print(f"\n{GREEN}demo finished in {time.monotonic() - started:.0f} s: two jobs trained on this machine, "
          f"the second from the first one's checkpoint.{RESET}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

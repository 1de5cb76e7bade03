"""docs/sdk.md cannot rot: every ```python block runs as pasted (a new interpreter each, in a real lab made by `sf`,
logged in to a real console), in page order; and no page of the docs links to a file outside the repository."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.conftest import make_researcher
from tests.integration.conftest import ConsoleProcess

REPO = Path(__file__).resolve().parents[2]
SDK_PAGE = REPO / "docs" / "sdk.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
CONFIRM = re.compile(r"and confirm (\S+)\s*$")


def python_blocks(page: Path) -> list[str]:
    """Return the ```python blocks of a Markdown page, in order."""
    return BLOCK.findall(page.read_text(encoding="utf-8"))


def run_block(code: str, *, cwd: Path, env: dict[str, str], console: ConsoleProcess, token: str) -> str:
    """Run one block in its own interpreter and return its output; a device code it prints is approved with
    `token` (as `sf login approve` would). Fails on a non-zero exit or after 300 s."""
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=cwd, env={**env, "PYTHONUNBUFFERED": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    lines = []
    deadline = time.monotonic() + 300
    for line in proc.stdout:
        lines.append(line)
        found = CONFIRM.search(line)
        if found:
            with console.client(token) as api:
                assert api.post("/api/cli/device/approve", json={"user_code": found.group(1)}).status_code == 200
        assert time.monotonic() < deadline, "".join(lines)
    output = "".join(lines)
    assert proc.wait(timeout=60) == 0, f"this block of docs/sdk.md failed:\n{code}\n--- output:\n{output}"
    return output


def test_every_python_example_of_the_sdk_page_runs(console: ConsoleProcess, tmp_path: Path) -> None:
    me = make_researcher(console, tmp_path)
    assert me.sf("new", "my-grpo", "--method", "tinyrl/grpo").returncode == 0
    me.commit("an experiment")
    earlier = me.json("submit", "my-grpo", "--profile", "cpu:1", "--set", "max_num_steps=2")["job_id"]
    blocks = python_blocks(SDK_PAGE)
    assert len(blocks) >= 3 and "build_submission" in blocks[0]  # the first example builds its bundle
    env = {k: v for k, v in me.env.items() if k != "FORGE_SERVER"}
    token = console.token_for(me.user)
    outputs = [run_block(code, cwd=me.lab, env=env, console=console, token=token) for code in blocks]
    assert outputs[0].strip().endswith("submitted"), outputs[0]
    assert "final status: succeeded" in outputs[1], outputs[1]
    newest, first = me.jobs()  # `resolve_job("my-grpo")` followed the experiment's newest job, not an error
    assert first["job_ref"] == earlier and newest["exp"] == "experiments/my-grpo"
    assert newest["status"] == "succeeded" and newest["job_ref"] in outputs[0]
    assert me.json("whoami")["user"]["username"] == me.user  # the device login's credentials were saved and work


def test_no_doc_links_outside_the_repository() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    outside = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor of the same page
            path = (page.parent / target.split("#", 1)[0]).resolve()
            if not path.is_relative_to(REPO) or not path.exists():
                outside.append(f"{page.relative_to(REPO)}: {target}")
    assert outside == []
    assert not [p for p in pages if "../shared" in p.read_text(encoding="utf-8")]

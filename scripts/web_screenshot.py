"""Regenerate docs/img/web-job.png and docs/img/web-compare.png: a real console's job page, and the comparison of
three tinyrl runs of different learning rates, in Debian's chromium.

A console starts on loopback with a temporary state directory (as `make demo` starts it); an account `alice` is
made, the CPU recipe `tinyrl/grpo` is submitted with `sf submit` three times (`--set learning_rate=…`) and followed
until each succeeds; then Playwright drives chromium (`STARFORGE_CHROMIUM`, else /usr/bin/chromium; never a
downloaded browser) to sign in with alice's API token and saves the top of the first job's page and of the three
runs' comparison (`/ui/compare`) at 1400×900 in the light theme. Run it from the repository root:
`.venv/bin/python scripts/web_screenshot.py` (`--out DIR` to write elsewhere).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from demo import BIN, SF, free_port, run, start_console, step  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "img"
RATES = ("0.3", "0.1", "0.03")  # the comparison's runs: tinyrl's default learning rate, and two smaller
VIEWPORT = {"width": 1400, "height": 900}
MAX_BYTES = 250_000


def _chromium() -> str:
    path = os.environ.get("STARFORGE_CHROMIUM") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        raise SystemExit(f"no chromium at {path}: run `scripts/services.sh up` (Debian's chromium), or set "
                         "STARFORGE_CHROMIUM")
    return path


def _finished_jobs(lab: Path, env: dict[str, str]) -> list[str]:
    """Create the experiment, submit it on one CPU slot once per learning rate, follow each until it ends and return
    their job ids."""
    run([SF, "new", "my-rl", "--method", "tinyrl/grpo"], cwd=lab, env=env, capture=True)
    run(["git", "add", "-A"], cwd=lab, env=env)
    run(["git", "-c", "user.name=docs", "-c", "user.email=docs@example.com", "commit", "-qm", "my-rl"], cwd=lab,
        env=env)
    jobs = []
    for rate in RATES:
        out = run([SF, "submit", "my-rl", "--profile", "cpu:1", "--set", "max_num_steps=40", "--set",
                   f"learning_rate={rate}"], cwd=lab, env=env, capture=True)
        found = re.search(r"r-[0-9a-z]{10}", out)
        if not found:
            raise SystemExit("sf submit printed no job id")
        run([SF, "job", "logs", found.group(0)], cwd=lab, env=env, capture=True)  # returns once the job has ended
        jobs.append(found.group(0))
    return jobs


def _screenshot(url: str, token: str, jobs: list[str], out: Path) -> None:
    """Sign in through the form as a person would and save the top of the first job's page and of the comparison
    of every job."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            context = browser.new_context(base_url=url, viewport=VIEWPORT, color_scheme="light")
            context.set_default_timeout(30_000)
            page = context.new_page()
            page.goto("/")
            page.get_by_label("API token").fill(token)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(url + "/")
            page.goto(f"/ui/jobs/{jobs[0]}")
            page.locator("#job [data-status]", has_text="succeeded").wait_for()
            page.locator("#log[data-ended]").wait_for()  # the log stream has run to its end
            page.locator('#charts figure[data-chart][data-drawn="true"]').first.wait_for()  # uPlot drew them
            out.mkdir(parents=True, exist_ok=True)
            shot = {"clip": {"x": 0, "y": 0, **VIEWPORT}, "animations": "disabled", "caret": "hide"}
            page.screenshot(path=str(out / "web-job.png"), **shot)
            page.goto("/ui/compare?runs=" + ",".join(jobs))
            page.locator('figure[data-chart][data-drawn="true"]').first.wait_for()
            page.screenshot(path=str(out / "web-compare.png"), **shot)
            context.close()
        finally:
            browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="the folder of the PNGs (default: %(default)s)")
    out = parser.parse_args().out.resolve()
    _chromium()  # fail before starting anything
    tmp = Path(tempfile.mkdtemp(prefix="starforge-screenshot-"))
    env = {**os.environ, "FORGE_HOME": str(tmp / "forge-home"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("FORGE_SERVER", None)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    step(f"Start a console on 127.0.0.1:{port}")
    (tmp / "state").mkdir()
    console, admin_token = start_console(tmp / "state", port, env)
    try:
        step("An account, and three tinyrl jobs run to their end")
        run([SF, "init", "demo-lab", "--yes"], cwd=tmp, env=env, capture=True)
        lab = tmp / "demo-lab"
        run([SF, "login", "--server", url, "--token", admin_token], cwd=lab, env=env, capture=True)
        token = run([SF, "admin", "user", "create", "alice"], cwd=lab, env=env, capture=True).strip().split()[-1]
        run([SF, "login", "--server", url, "--token", token], cwd=lab, env=env, capture=True)
        jobs = _finished_jobs(lab, env)
        step(f"Sign in in chromium and save the page of {jobs[0]} and the comparison of {', '.join(jobs)}")
        _screenshot(url, token, jobs, out)
    finally:
        console.terminate()
        console.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    too_big = False
    for name in ("web-job.png", "web-compare.png"):
        size = (out / name).stat().st_size
        print(f"wrote {out / name} ({size / 1000:.0f} kB)")
        if size > MAX_BYTES:
            print(f"warning: {name} is larger than {MAX_BYTES // 1000} kB; docs images should stay small",
                  file=sys.stderr)
            too_big = True
    return 1 if too_big else 0


if __name__ == "__main__":
    raise SystemExit(main())

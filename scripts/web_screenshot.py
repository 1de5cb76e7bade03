"""Regenerate the screenshots of docs/web.md (docs/img/web-*.png): a real console's views, in Debian's chromium.

A console starts on loopback with a temporary state directory (as `make demo` starts it); an account `alice` is
made and a sweep of the CPU recipe `tinyrl/grpo` over three learning rates is submitted with `sf sweep` and
followed until each run succeeds; then Playwright drives chromium (`STARFORGE_CHROMIUM`, else /usr/bin/chromium;
never a downloaded browser) to sign in with alice's API token and saves, at 1400×900 in the light theme: the jobs
list (`web-jobs.png`), the top of a run's page (`web-job.png`), what it is made of and its lineage
(`web-job-inputs.png`), its log (`web-log.png`), the comparison of the three runs (`web-compare.png`), the sweep
(`web-sweep.png`) and the diff of two runs (`web-diff.png`). Run it from the repository root:
`.venv/bin/python scripts/web_screenshot.py` (`--out DIR` to write elsewhere; about a minute).
"""

from __future__ import annotations

import argparse
import json
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


SHOTS = ("web-jobs.png", "web-job.png", "web-job-inputs.png", "web-log.png", "web-compare.png", "web-sweep.png",
         "web-diff.png")


def _finished_sweep(lab: Path, env: dict[str, str]) -> tuple[str, list[str]]:
    """Create the experiment, submit a sweep of it over `RATES` on one CPU slot each, follow every run until it ends
    and return the sweep's id and its job ids."""
    run([SF, "new", "my-rl", "--method", "tinyrl/grpo"], cwd=lab, env=env, capture=True)
    run(["git", "add", "-A"], cwd=lab, env=env)
    run(["git", "-c", "user.name=docs", "-c", "user.email=docs@example.com", "commit", "-qm", "my-rl"], cwd=lab,
        env=env)
    out = run([SF, "sweep", "my-rl", "--profile", "cpu:1", "--set", "max_num_steps=40", "--grid",
               "learning_rate=" + ",".join(RATES), "--json"], cwd=lab, env=env, capture=True)
    jobs = sorted(set(re.findall(r"r-[0-9a-z]{10}", out)), key=out.index)
    sweep = json.loads(out).get("sweep_id", "")
    if len(jobs) != len(RATES) or not sweep:
        raise SystemExit(f"sf sweep printed no sweep or not {len(RATES)} jobs: {out[:400]}")
    for job in jobs:
        run([SF, "job", "logs", job], cwd=lab, env=env, capture=True)  # returns once the job has ended
    return sweep, jobs


def _screenshot(url: str, token: str, sweep: str, jobs: list[str], out: Path) -> None:
    """Sign in through the form as a person would and save each view (`SHOTS`)."""
    from playwright.sync_api import sync_playwright

    drawn = 'figure[data-chart][data-drawn="true"]'
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
            out.mkdir(parents=True, exist_ok=True)
            shot = {"animations": "disabled", "caret": "hide"}

            def save(name: str, heading: str = "") -> None:
                if heading:  # that section at the top of the window
                    page.locator(heading).evaluate("(h) => h.scrollIntoView({block: 'start'})")
                page.screenshot(path=str(out / name), **shot)

            page.goto("/")
            save("web-jobs.png")
            page.goto(f"/ui/jobs/{jobs[0]}")
            page.locator("#job [data-status]", has_text="succeeded").wait_for()
            page.locator("#log[data-ended]").wait_for()  # the log stream has run to its end
            page.locator(f"#charts {drawn}").first.wait_for()  # uPlot drew them
            save("web-job.png")
            save("web-job-inputs.png", "#h-inputs")
            save("web-log.png", "#h-log")
            page.goto("/ui/compare?runs=" + ",".join(jobs))
            page.locator(drawn).first.wait_for()
            save("web-compare.png")
            page.goto(f"/ui/sweeps/{sweep}")
            page.locator(drawn).first.wait_for()
            save("web-sweep.png")
            page.goto(f"/ui/diff?a={jobs[0]}&b={jobs[1]}")
            save("web-diff.png")
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
        step("An account, and a sweep of three tinyrl runs run to their end")
        run([SF, "init", "demo-lab", "--yes"], cwd=tmp, env=env, capture=True)
        lab = tmp / "demo-lab"
        run([SF, "login", "--server", url, "--token", admin_token], cwd=lab, env=env, capture=True)
        token = run([SF, "admin", "user", "create", "alice"], cwd=lab, env=env, capture=True).strip().split()[-1]
        run([SF, "login", "--server", url, "--token", token], cwd=lab, env=env, capture=True)
        sweep, jobs = _finished_sweep(lab, env)
        step(f"Sign in in chromium and save the views of sweep {sweep} ({', '.join(jobs)})")
        _screenshot(url, token, sweep, jobs, out)
    finally:
        console.terminate()
        console.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    too_big = False
    for name in SHOTS:
        size = (out / name).stat().st_size
        print(f"wrote {out / name} ({size / 1000:.0f} kB)")
        if size > MAX_BYTES:
            print(f"warning: {name} is larger than {MAX_BYTES // 1000} kB; docs images should stay small",
                  file=sys.stderr)
            too_big = True
    return 1 if too_big else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A job's log on its page, drawn as a terminal in a real browser (Debian's chromium, Playwright, a real console).

A custom job prints what training jobs print: tqdm bars redrawn with carriage returns and cursor-up sequences, ANSI
colours, a window title and cursor modes, text that looks like HTML, emoji. The page shows its final lines (each bar
once, in its last state), styled, literal and searchable, and links the raw log as a download; nothing leaves the
console. The renderer's chunk handling (a split anywhere, even inside an escape sequence) is checked on the page's own
`StarForgeLog.Terminal`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.test_web_browser import Browsers, browser, browsers  # noqa: F401
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.helpers import bundle, spec_for, submit, wait_for_end

# the job's own script: it writes these pieces to stdout one by one (the test computes the same bytes)
EMIT = r'''
def pieces():
    esc = "\x1b"
    out = ["log begins\n", esc + "]0;my title" + "\x07", esc + "[?25l",
           esc + "[31mred warning" + esc + "[0m plain\n", "<b>html</b> stays text\n", "emoji: 🚀 done ✓\n",
           "needle one\n", esc + "[1;38;5;34mbold green needle" + esc + "[39;22m\n"]
    for i in range(201):  # two tqdm bars: position 0 and 1 (the second drawn one line down, then the cursor back up)
        out.append("\r" + "epoch %3d%%|%-20s| %d/200" % (i // 2, "#" * (i // 10), i))
        out.append("\n\r" + "batch %3d%%|%-20s| %d/200" % (i // 2, "#" * (i // 10), i) + esc + "[A")
    out += ["\n\n", "after the bars, a needle\n", esc + "[?25h"]
    return out
'''
SCRIPT = EMIT + r'''
import sys
for piece in pieces():
    sys.stdout.buffer.write(piece.encode("utf-8"))
    sys.stdout.buffer.flush()
'''
BIG = r'''
import sys
out = sys.stdout
for i in range(50000):
    out.write("line %d of the long log\n" % i)
for i in range(1001):
    out.write("\rtraining %3d%%|%-20s| %d/1000" % (i // 10, "#" * (i // 50), i))
out.write("\nthe very end\n")
'''


def _expected() -> bytes:
    scope: dict[str, Any] = {}
    exec(EMIT, scope)  # the same function the job runs
    return "".join(scope["pieces"]()).encode("utf-8")


def _job(api: httpx.Client, name: str, script: str) -> str:
    spec = spec_for(api, "custom/custom", exp=f"experiments/{name}")
    spec["spec"]["framework"].update(image="nvcr.io/t/t:1", observability_url="https://example.com/x")
    files = {f"experiments/{name}/train.sh": f'exec {sys.executable} "$(dirname "$0")/emit.py"\n',
             f"experiments/{name}/emit.py": script}
    job = str(submit(api, spec, data=bundle(files)).json()["job_id"])
    assert wait_for_end(api, job)["status"] == "succeeded"
    return job


@pytest.fixture(scope="module")
def jobs(console: ConsoleProcess) -> Iterator[dict[str, str]]:
    user, other = unique("log"), unique("lother")
    with console.client(console.token_for(user)) as api:
        yield {"user": user, "other": other, "tty": _job(api, "tty", SCRIPT), "big": _job(api, "big", BIG)}


def _lines(page: Any) -> list[str]:
    return [str(line) for line in page.evaluate(
        "Array.from(document.querySelectorAll('#log .log-line'), (l) => l.textContent.replace(/\\n$/, ''))")]


def test_a_tty_log_renders_as_its_final_lines(browsers: Browsers, console: ConsoleProcess,  # noqa: F811
                                               jobs: dict[str, str]) -> None:
    visit = browsers.signed_in(console.token_for(jobs["user"]))
    page = visit.page
    page.goto(f"/ui/jobs/{jobs['tty']}")
    page.locator("#log[data-ended='succeeded']").wait_for()
    lines = _lines(page)
    start = lines.index("log begins")
    assert lines[start:start + 9] == [
        "log begins", "red warning plain", "<b>html</b> stays text", "emoji: 🚀 done ✓", "needle one",
        "bold green needle", "epoch 100%|####################| 200/200", "batch 100%|####################| 200/200",
        "after the bars, a needle"]
    text = page.locator("#log").inner_text()
    assert "[A" not in text and "\x1b" not in text and "my title" not in text and "25l" not in text
    assert sum("epoch" in line for line in lines) == 1 and sum("batch" in line for line in lines) == 1
    assert page.locator("#log span.ansi-fg-1").inner_text() == "red warning"
    green = page.locator("#log span.ansi-fg-2.ansi-bold")  # 38;5;34 maps to the palette's green
    assert green.inner_text() == "bold green needle"
    assert page.locator("#log b").count() == 0  # the html is text
    assert page.locator("#log span.ansi-fg-1").evaluate("(e) => getComputedStyle(e).color") != \
        page.locator("#log").evaluate("(e) => getComputedStyle(e).color")

    find = page.get_by_label("Search the log")
    find.fill("NEEDLE")  # case-insensitive
    assert page.locator("#log mark").count() == 3
    assert page.locator("#log-found").inner_text() == "1 of 3"
    assert page.locator("#log mark.current").inner_text() == "needle"
    find.press("Enter")
    assert page.locator("#log-found").inner_text() == "2 of 3"
    assert page.locator("#log mark.current").evaluate("(m) => m.closest('span.ansi-fg-2') !== null"
                                                      " || m.querySelector('span.ansi-fg-2') !== null")
    find.press("Shift+Enter")
    find.press("Shift+Enter")
    assert page.locator("#log-found").inner_text() == "3 of 3"
    page.get_by_role("button", name="Next match").click()
    assert page.locator("#log-found").inner_text() == "1 of 3"
    find.fill("")
    assert page.locator("#log mark").count() == 0

    link = page.get_by_role("link", name="Download the whole log")
    got = page.request.get(link.get_attribute("href"))
    assert got.status == 200
    assert got.headers["content-type"] == "text/plain; charset=utf-8"
    assert got.headers["content-disposition"] == f'attachment; filename="{jobs["tty"]}.log"'
    assert _expected() in got.body()  # the raw bytes, escape sequences and carriage returns included
    assert visit.foreign() == [], visit.foreign()


# every split of this stream into two chunks draws the same lines with the same styles as the whole of it
SPLITS = r"""
(() => {
  const T = window.StarForgeLog.Terminal;
  const E = "\x1b";
  const whole = "a " + E + "[31mred" + E + "[0m " + E + "]0;title\x07" + E + "[?25l<i>x</i> 😀 " + E + "[38;2;0;0;255mY"
    + E + "[39m\r\nbar 1\rbar 2" + E + "[K\n\rup\n" + E + "[1Adown" + E + "P1$r" + E + "\\ ok" + E + "(B\r\n";
  const draw = (chunks) => { const t = new T(); for (const c of chunks) t.write(c);
    return JSON.stringify(t.lines.map((_, i) => t.segments(i))); };
  const want = draw([whole]);
  const bad = [];
  for (let cut = 1; cut < whole.length; cut++) if (draw([whole.slice(0, cut), whole.slice(cut)]) !== want) bad.push(cut);
  const t = new T(); t.write(whole);
  return {bad, text: t.text()};
})()
"""


def test_chunks_split_anywhere_and_a_long_log_keeps_its_end(browsers: Browsers, console: ConsoleProcess,  # noqa: F811
                                                            jobs: dict[str, str]) -> None:
    visit = browsers.signed_in(console.token_for(jobs["user"]))
    page = visit.page
    page.goto(f"/ui/jobs/{jobs['big']}")
    page.locator("#log[data-ended='succeeded']").wait_for(timeout=60_000)
    checked = page.evaluate(SPLITS)
    assert checked == {"bad": [], "text": "a red <i>x</i> 😀 Y\nbar 2\ndown ok"}, checked
    lines = _lines(page)
    end = lines.index("the very end")
    assert len(lines) <= 20_000 + 1_000 and lines[end - 2:end] == ["line 49999 of the long log",
                                                                    "training 100%|####################| 1000/1000"]
    assert sum("training" in line for line in lines) == 1
    notice = page.locator("#log-cut")
    assert notice.is_visible() and "last 20,000 lines" in notice.inner_text()
    assert notice.get_by_role("link", name="download the whole log").get_attribute("href").endswith(
        f"/ui/jobs/{jobs['big']}/log.txt")
    assert visit.foreign() == [], visit.foreign()


def test_the_log_file_is_for_its_owner_only(console: ConsoleProcess, jobs: dict[str, str]) -> None:
    url = f"{console.url}/ui/jobs/{jobs['tty']}/log.txt"
    assert httpx.get(url, timeout=30).status_code == 401
    other = httpx.get(url, headers={"Authorization": f"Bearer {console.token_for(jobs['other'])}"}, timeout=30)
    assert other.status_code == 404
    mine = httpx.get(url, headers={"Authorization": f"Bearer {console.token_for(jobs['user'])}"}, timeout=30)
    assert mine.status_code == 200 and _expected() in mine.content
    assert mine.headers["content-length"] == str(len(mine.content))
    stream = httpx.get(f"{console.url}/ui/jobs/{jobs['tty']}/logs", timeout=30,
                       headers={"Authorization": f"Bearer {console.token_for(jobs['user'])}"})
    events = [json.loads(line[6:]) for line in stream.text.splitlines() if line.startswith("data: \"")]
    assert _expected().decode() in "".join(events)  # the stream the page reads keeps carriage returns

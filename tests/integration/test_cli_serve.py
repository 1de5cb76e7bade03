"""`sf serve` through the real `sf` against a real console: start (text and --json), list, extend, keys, chat before
the server is up, stop; another account's service does not exist; refusals name their field with a hint and start
nothing; the playground pages extend and stop a service with the session's CSRF token.

The service here waits in the queue (an h200 series with no capacity, `admission.unplaceable: queue`), so every
command meets a real service row and job without a model server; a ready service answering a chat is the browser
test's (tests/e2e/test_playground_browser.py), the proxy's rules are serve1's tests.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import DEFAULT_CONFIG, ConsoleProcess, make_console, unique
from tests.integration.test_cli_account import sf, token_login

MODEL = "hf-internal-testing/tiny-random-gpt2"
WAITING = ("--profile", "h200", "--gpus", "8")  # admitted, queued: no h200 capacity on this console


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    proc = make_console(tmp_path_factory, "sqlite", config={**DEFAULT_CONFIG, "admission": {"unplaceable": "queue"},
                                                             "serving": {"max_ttl_hours": 24}})
    proc.start()
    yield proc
    proc.stop()
    shutil.rmtree(proc.state_dir / "runs", ignore_errors=True)


def _json(done: Any) -> Any:
    assert done.stdout.count("\n") == 1, (done.stdout, done.stderr)  # one JSON object and nothing else on stdout
    return json.loads(done.stdout)


def test_start_list_extend_keys_chat_and_stop(console: ConsoleProcess, tmp_path: Path) -> None:
    home, other_home = tmp_path / "owner", tmp_path / "other"
    token_login(console, home, unique("sv"))
    token_login(console, other_home, unique("so"))

    started = sf("serve", "start", MODEL, *WAITING, "--ttl-hours", "2", "--json", home=home)
    assert started.returncode == 0, started.stderr
    service = _json(started)
    sid = service["id"]
    assert (service["model"], service["status"], service["gpus"], service["url"]) == (
        MODEL, "queued", 8, f"/api/services/{sid}/v1")
    assert service["expires_at"] - service["created_at"] == pytest.approx(2 * 3600, abs=1)

    job = sf("job", "status", sid, "--json", home=home)  # a service is a job of yours, under the same id
    assert job.returncode == 0 and _json(job)["job_ref"] == sid, job.stderr

    text = sf("serve", "start", MODEL, *WAITING, home=home)  # the human view: the base URL and the snippet
    assert text.returncode == 0, text.stderr
    second = text.stdout.split(f"{console.url}/api/services/", 1)[1].split("/v1", 1)[0]
    assert f'OpenAI(base_url="{console.url}/api/services/{second}/v1"' in text.stdout
    assert f"sf serve key add {second}" in text.stdout and "queued" in text.stderr

    listed = sf("serve", "ls", home=home)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert rows[0] == ["ID", "MODEL", "STATUS", "GPUS", "EXPIRES", "RUN"]
    assert [sid, MODEL, "queued", "8"] in [r[:4] for r in rows] and second in listed.stdout
    assert {s["id"] for s in _json(sf("serve", "ls", "--json", home=home))["services"]} == {sid, second}

    extended = _json(sf("serve", "extend", sid, "--hours", "1.5", "--json", home=home))
    assert extended["expires_at"] == pytest.approx(service["expires_at"] + 1.5 * 3600, abs=2)
    over = sf("serve", "extend", sid, "--hours", "100", home=home)
    assert over.returncode == 1 and "hours:" in over.stderr and "24" in over.stderr and "hint:" in over.stderr
    assert sf("serve", "extend", sid, "--hours", "0", home=home).returncode == 1

    key_text = sf("serve", "key", "add", sid, "--name", "notebook", home=home)
    assert key_text.returncode == 0, key_text.stderr
    assert key_text.stdout.startswith("sfk-") and key_text.stdout.count("\n") == 1  # the secret alone on stdout
    made = _json(sf("serve", "key", "add", sid, "--json", home=home))
    assert made["key"].startswith("sfk-") and made["key"].startswith(made["prefix"])
    keys = _json(sf("serve", "key", "ls", sid, "--json", home=home))["keys"]
    assert len(keys) == 2 and all("key" not in k for k in keys)
    assert key_text.stdout.strip() not in sf("serve", "key", "ls", sid, home=home).stdout
    revoked = _json(sf("serve", "key", "rm", sid, str(made["id"]), "--json", home=home))
    assert revoked["id"] == made["id"] and revoked["revoked_at"]

    early = sf("serve", "chat", sid, "Hello", home=home)  # the server is not up: a 503 said as such, exit 1
    assert early.returncode == 1 and f"service {sid} is queued" in early.stderr and "maintenance" not in early.stderr

    for command in (("stop", sid), ("extend", sid), ("key", "ls", sid), ("chat", sid, "hi")):
        foreign = sf("serve", *command, home=other_home)
        assert foreign.returncode == 1 and "no service" in foreign.stderr, (command, foreign.stderr)
    assert _json(sf("serve", "ls", "--all", "--json", home=other_home)) == {"services": []}

    stopped = sf("serve", "stop", sid, "--json", home=home)
    assert stopped.returncode == 0 and _json(stopped)["status"] == "stopped", stopped.stderr
    assert sf("serve", "stop", second, home=home).returncode == 0
    assert _json(sf("serve", "ls", "--json", home=home)) == {"services": []}
    everything = {s["id"]: s["status"] for s in _json(sf("serve", "ls", "--all", "--json", home=home))["services"]}
    assert everything == {sid: "stopped", second: "stopped"}
    empty = sf("serve", "ls", home=home)
    assert empty.stdout == "" and "No service is running" in empty.stderr


@pytest.mark.parametrize(("args", "field", "says"), [
    (("run:r-0000000000",), "model", "r-0000000000"),
    ((MODEL, *WAITING, "--ttl-hours", "100"), "ttl_hours", "24"),
    (("/etc/not-a-model-root",), "model", "model_roots"),
    ((MODEL, "--gpus", "-1"), "gpus", "whole number"),  # the console's rule, not a local one
])
def test_refusals_name_their_field_and_start_nothing(console: ConsoleProcess, tmp_path: Path, args: tuple[str, ...],
                                                     field: str, says: str) -> None:
    home = tmp_path / "home"
    token_login(console, home, unique("sr"))
    text = sf("serve", "start", *args, home=home)
    assert text.returncode == 1, text.stdout
    assert f"- {field}:" in text.stderr and says in text.stderr and "hint:" in text.stderr
    assert "Traceback" not in text.stderr
    refused = sf("serve", "start", *args, "--json", home=home)
    body = _json(refused)
    assert refused.returncode == 1 and body["ok"] is False
    assert body["problems"][0]["field"] == field and body["problems"][0]["hint"]
    assert _json(sf("serve", "ls", "--all", "--json", home=home)) == {"services": []}


@contextmanager
def _browser(console: ConsoleProcess, token: str) -> Iterator[httpx.Client]:
    """A browser's session on the console (signed in through the form), without following redirects."""
    with httpx.Client(base_url=console.url, follow_redirects=False, timeout=30) as client:
        assert client.post("/ui/signin", data={"token": token}).status_code == 303
        yield client


def test_the_playground_pages_extend_and_stop_with_the_sessions_csrf(console: ConsoleProcess) -> None:
    owner, other = console.token_for(unique("pw")), console.token_for(unique("px"))
    with console.client(owner) as api:
        made = api.post("/api/services", json={"model": MODEL, "profile": "h200", "gpus": 8})
    assert made.status_code == 202, made.text
    sid = made.json()["id"]
    with _browser(console, owner) as browser, _browser(console, other) as stranger:
        listing = browser.get("/ui/playground")
        assert listing.status_code == 200 and f'href="/ui/playground/{sid}"' in listing.text
        assert listing.headers["content-security-policy"].startswith("default-src 'self'")
        page = browser.get(f"/ui/playground/{sid}")
        assert page.status_code == 200 and MODEL in page.text and 'id="chat-wait"' in page.text
        csrf = re.search(r'data-csrf="([0-9a-f]+)"', page.text)
        assert csrf is not None
        assert stranger.get(f"/ui/playground/{sid}").status_code == 404
        assert stranger.post(f"/ui/playground/{sid}/stop", data={"csrf": csrf.group(1)}).status_code in (403, 404)

        # the chat's request: the session reaches the proxy only with its CSRF header (here: not ready, 503)
        chat = f"/api/services/{sid}/v1/chat/completions"
        body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
        assert browser.post(chat, json=body).status_code == 403
        assert browser.post(chat, json=body, headers={"X-CSRF-Token": csrf.group(1)}).status_code == 503

        before = made.json()["expires_at"]
        assert browser.post(f"/ui/playground/{sid}/extend", data={"hours": "1"}).status_code == 403
        bad = browser.post(f"/ui/playground/{sid}/extend", data={"hours": "soon", "csrf": csrf.group(1)},
                           headers={"Accept": "text/html"})
        assert bad.status_code == 422 and "hours must be a number of hours" in bad.text
        moved = browser.post(f"/ui/playground/{sid}/extend", data={"hours": "1", "csrf": csrf.group(1)})
        assert moved.status_code == 303 and moved.headers["location"] == f"/ui/playground/{sid}"
        with console.client(owner) as api:
            assert api.get(f"/api/services/{sid}").json()["expires_at"] == pytest.approx(before + 3600, abs=2)
        stopped = browser.post(f"/ui/playground/{sid}/stop", data={"csrf": csrf.group(1)})
        assert stopped.status_code == 303
        with console.client(owner) as api:
            assert api.get(f"/api/services/{sid}").json()["status"] == "stopped"
        after = browser.get(f"/ui/playground/{sid}")
        assert after.status_code == 200 and 'id="chat"' not in after.text and "/extend" not in after.text

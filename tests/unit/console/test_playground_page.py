"""The playground page as rendered: the services to pick, one service's facts, its forms and the chat's wiring,
every value escaped, nothing loaded from elsewhere."""

from __future__ import annotations

import re

from starforge.console.services.accounts.view import UserView
from starforge.console.web.playground_pages import hours_of, playground_html
from starforge.console.web.sessions import WebCaller

CALLER = WebCaller(UserView(1, "alice", "operator", "", False), session="s3cret")
READY = {"id": "r-9", "name": "", "model": "run:r-1", "status": "ready", "gpus": 0, "server": "transformers",
         "expires_at": 1000.0 + 1800, "run_id": "r-1", "url": "/api/services/r-9/v1"}


def test_the_list_links_each_service_and_the_nav_names_the_page() -> None:
    html = playground_html(CALLER, [READY, {**READY, "id": "r-8", "status": "starting"}], None, now=1000.0)
    assert 'href="/ui/playground/r-9"' in html and 'href="/ui/playground/r-8"' in html
    assert re.search(r'href="/ui/playground" aria-current="page"', html)
    assert 'id="chat"' not in html


def test_no_service_says_how_to_start_one() -> None:
    assert "sf serve start run:&lt;run_id&gt;" in playground_html(CALLER, [], None)


def test_a_ready_service_shows_its_facts_forms_and_chat() -> None:
    html = playground_html(CALLER, [READY], READY, now=1000.0)
    assert 'href="/ui/jobs/r-1"' in html and 'href="/ui/jobs/r-9"' in html  # its run and its own job
    assert 'action="/ui/playground/r-9/extend"' in html and 'action="/ui/playground/r-9/stop"' in html
    assert html.count(f'value="{CALLER.csrf}"') == 3  # sign-out, extend, stop and f'data-csrf="{CALLER.csrf}"' in html
    assert 'data-endpoint="/api/services/r-9/v1/chat/completions"' in html
    assert "30 min 00 s" in html and "chat-wait" not in html
    assert not re.search(r"<script>|src=\"(?!/ui/static/)|href=\"https?://", html)  # no inline script, no CDN


def test_a_starting_service_says_it_is_not_ready_and_a_stopped_one_has_no_forms() -> None:
    starting = playground_html(CALLER, [], {**READY, "status": "starting"}, now=1000.0)
    assert 'id="chat-wait"' in starting and 'id="chat"' in starting
    stopped = playground_html(CALLER, [], {**READY, "status": "stopped"}, now=1000.0)
    assert "/extend" not in stopped and 'id="chat"' not in stopped


def test_values_are_escaped() -> None:
    html = playground_html(CALLER, [], {**READY, "model": "<img src=x onerror=alert(1)>"}, now=1000.0)
    assert "<img src=x" not in html and "&lt;img src=x" in html


def test_hours_are_read_as_numbers_when_they_are_one() -> None:
    assert hours_of(" 1.5 ") == 1.5 and hours_of("two") == "two"  # the service refuses what is not a number


def test_a_refused_extension_is_shown_at_the_hours_field() -> None:
    html = playground_html(CALLER, [], READY, now=1000.0, hours="soon", problem="hours must be a number of hours")
    assert 'value="soon"' in html and 'aria-invalid="true"' in html
    assert 'id="extend-problem" role="alert">hours must be a number of hours<' in html

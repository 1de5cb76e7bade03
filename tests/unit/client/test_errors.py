"""Error bodies (wire-protocol §9.1): the detail text, its rendering, the problems, the exception classes."""

from __future__ import annotations

import json

import pytest

from starforge.client import AuthError, ConsoleError, Forbidden, Maintenance, NotFound, Rejected, Unavailable
from starforge.client._detail import Detail, detail_text
from starforge.client._errors import error_from_response
from starforge.contract import Problem


def body(value: object) -> bytes:
    return json.dumps(value).encode()


def test_detail_string_is_trimmed() -> None:
    assert detail_text(body({"detail": "  nope \n"})) == "nope"


def test_detail_list_shows_the_first_item_only() -> None:
    assert detail_text(body({"detail": [{"loc": ["body"], "msg": "field required"}, {"msg": "second"}]})) == "field required"
    assert detail_text(body({"detail": ["plain", "other"]})) == "plain"


@pytest.mark.parametrize("raw", [body({"error": "x"}), body({"detail": {"a": 1}}), b"<html>502 Bad Gateway</html>"])
def test_otherwise_the_raw_body(raw: bytes) -> None:
    assert detail_text(raw) == raw.decode()


def test_raw_body_is_cut_at_240_characters_and_empty_bodies_name_the_status() -> None:
    assert detail_text(b"x" * 1000) == "x" * 240
    assert "500" in detail_text(b"", 500)


def test_rendering_title_bullets_and_body() -> None:
    parsed = Detail.parse("拒绝：\n- spec.a: bad；use b\n- spec.c: worse\nbody text")
    assert parsed.title == "拒绝"
    assert parsed.bullets == (("spec.a: bad", "use b"), ("spec.c: worse", ""))
    assert parsed.render() == "拒绝\n  - spec.a: bad\n      use b\n  - spec.c: worse"
    assert Detail.parse("Title: kept\nsome body").render() == "Title: kept\n  some body"


def test_rejection_problems_come_from_the_body_list_first() -> None:
    raw = body({
        "detail": "The JobSpec was rejected\n- spec.resources.pools: no resource pool is declared",
        "problems": [{"field": "spec.resources.pools", "code": "pools_empty",
                      "message": "no resource pool is declared", "hint": "pass --profile"}],
    })
    error = error_from_response(400, raw)
    assert isinstance(error, Rejected)
    assert error.problems == [Problem("spec.resources.pools", "pools_empty", "no resource pool is declared",
                                      "pass --profile")]
    assert error.title == "The JobSpec was rejected"


def test_rejection_problems_keep_their_data_and_a_malformed_data_is_dropped() -> None:
    entry = {"field": "spec.framework.image", "code": "image_not_allowed", "message": "m", "hint": "h",
             "data": {"registry": "docker.io", "allowed": ["nvcr.io"], "got": "team/t:1"}}
    raw = body({"detail": "The JobSpec was rejected\n- spec.framework.image: m",
                "problems": [entry, {**entry, "data": ["not", "an", "object"]}]})
    kept, dropped = error_from_response(400, raw).problems
    assert kept.data == {"registry": "docker.io", "allowed": ["nvcr.io"], "got": "team/t:1"}
    assert kept.to_dict() == entry and dropped.data == {}


def test_a_rejected_without_problems_recovers_them_from_its_detail() -> None:
    error = Rejected("The JobSpec was rejected\n- spec.a: bad")
    assert error.problems == [Problem("spec.a", "unknown", "bad")]
    assert Rejected("refused").problems == [Problem("<root>", "unknown", "refused")]


def test_rejection_problems_from_detail_bullets() -> None:
    raw = body({"detail": "The JobSpec was rejected\n- spec.a: bad\n- spec.b: expected a float, got a string"})
    error = error_from_response(422, raw)
    assert [(p.field, p.message) for p in error.problems] == [("spec.a", "bad"),
                                                               ("spec.b", "expected a float, got a string")]
    assert error_from_response(409, body({"detail": "sealed"})).problems == [Problem("<root>", "unknown", "sealed")]


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, Rejected), (401, AuthError), (403, Forbidden), (404, NotFound), (409, Rejected), (413, Rejected),
     (422, Rejected), (429, Unavailable), (500, Unavailable), (503, Maintenance), (418, ConsoleError),
     (302, ConsoleError)],
)
def test_status_classes(status: int, kind: type[ConsoleError]) -> None:
    error = error_from_response(status, body({"detail": "maintenance: back at 18:00"}))
    assert type(error) is kind
    assert error.status == status
    if status != 302:
        assert error.detail == "maintenance: back at 18:00"


def test_503_says_the_console_is_in_maintenance_then_the_note_and_what_to_do() -> None:
    error = error_from_response(503, body({"detail": "back at 14:00 UTC", "problems": []}))
    assert isinstance(error, Maintenance) and isinstance(error, Unavailable) and error.note == "back at 14:00 UTC"
    assert error.detail == "the console is in maintenance mode: back at 14:00 UTC"
    assert "try again" in error.hint and "sf admin maintenance show" in error.hint
    assert [(p.field, p.code) for p in error.problems] == [("<root>", "maintenance")]
    proxy = error_from_response(503, b"<html>Service Unavailable</html>")  # no console answered: not maintenance
    assert type(proxy) is Unavailable and proxy.hint == "try again later"


def test_401_hints_at_login() -> None:
    assert "sf login" in error_from_response(401, body({"detail": "token expired"})).hint

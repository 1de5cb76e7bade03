"""Every surface of a quota is derived from the one table (`starforge.wire.quota_fields`): the console's typed quota,
its defaults and its store row, the admin API's body, answer and schema, the web admin form, the `sf … quota set`
options and MCP's explanations each name every cap of the table, so a cap added there shows up in all of them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from starforge.cli import cmd_admin, cmd_console
from starforge.cli._quota_options import quota_options, quota_text
from starforge.console.api.routers._openapi import QUOTA
from starforge.console.app import bootstrap_admin, build_console
from starforge.console.services.accounts import admin
from starforge.console.services.context import Runtime
from starforge.console.services.errors import Rejected
from starforge.console.services.quota.caps import QuotaView
from starforge.console.settings import QuotaDefaults, load_settings
from starforge.console.store.models import Quota
from starforge.console.web import admin_pages
from starforge.console.web.sessions import WebCaller
from starforge.contract import CODES, Problem
from starforge.mcp._explain import FIXES, explain
from starforge.wire.quota_fields import (
    INTEGER,
    NAMES,
    NUMBER,
    QUOTA_FIELDS,
    SETTABLE,
    Effect,
    QuotaField,
    cap_text,
)

NAMES_OF = [cap.name for cap in QUOTA_FIELDS]
GOOD: dict[str, Any] = {INTEGER: 3, NUMBER: 2.5, NAMES: ["cpu", "h200"]}


def _good(cap: QuotaField) -> Any:
    return -3 if cap.minimum < 0 else GOOD[cap.type]


def _bad(cap: QuotaField) -> Any:
    return ["x" * (int(cap.maximum) + 1)] if cap.type == NAMES else cap.maximum + 1


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, WebCaller]]:
    settings = load_settings(state_dir=tmp_path_factory.mktemp("quota"), run_background=False)
    rt = build_console(settings).runtime
    token = bootstrap_admin(rt)
    assert token
    yield rt, WebCaller(rt.accounts.user(token), session="a-session")
    rt.db.dispose()


def test_the_console_quota_its_defaults_and_its_row_are_the_table() -> None:
    assert [f.name for f in fields(QuotaView)] == NAMES_OF
    assert [f.name for f in fields(QuotaDefaults)] == NAMES_OF
    assert set(Quota.__table__.columns.keys()) - {"user_id"} == set(NAMES_OF)
    assert list(QuotaDefaults().to_dict()) == NAMES_OF
    assert (QuotaDefaults().max_concurrent_gpus, QuotaDefaults().max_concurrent_jobs) == (16, 8)


@pytest.mark.parametrize("cap", QUOTA_FIELDS, ids=lambda cap: cap.name)
def test_the_table_row_is_complete(cap: QuotaField) -> None:
    assert cap.type in (INTEGER, NUMBER, NAMES) and cap.help and cap.effects
    assert cap.minimum <= 0 <= cap.maximum
    assert all(code in CODES for code in cap.codes)
    if cap.settable:
        assert cap.label and cap.hint and cap.form_id.startswith("q-") and all(o.startswith("--") for o in cap.options)


def test_the_api_schema_declares_every_cap() -> None:
    schema = QUOTA["requestBody"]["content"]["application/json"]["schema"]
    assert list(schema["properties"]) == ["username", *NAMES_OF] and schema["required"] == ["username"]
    for cap in QUOTA_FIELDS:
        declared = schema["properties"][cap.name]
        assert declared["type"] == ("array" if cap.type == NAMES else cap.type) and declared["description"] == cap.help


@pytest.mark.parametrize("cap", QUOTA_FIELDS, ids=lambda cap: cap.name)
def test_the_api_sets_and_answers_every_cap_and_refuses_it_out_of_bounds(console: tuple[Runtime, WebCaller],
                                                                        cap: QuotaField) -> None:
    rt, _caller = console
    answer = admin.set_quota(rt, body={"username": "admin", cap.name: _good(cap)})
    assert list(answer) == ["username", *NAMES_OF]
    assert answer[cap.name] == _good(cap) == admin.get_quota(rt, username="admin")[cap.name]
    with pytest.raises(Rejected) as refused:
        admin.set_quota(rt, body={"username": "admin", cap.name: _bad(cap)})
    assert [p.field for p in refused.value.problems or []] == [cap.name]
    assert admin.get_quota(rt, username="admin")[cap.name] == _good(cap)  # a refused body changes nothing


def test_the_admin_form_shows_and_sets_every_settable_cap(console: tuple[Runtime, WebCaller]) -> None:
    rt, caller = console
    assert tuple(cap.name for cap in SETTABLE) == admin_pages.QUOTA_FIELDS
    html = admin_pages.admin_page(rt, caller, account="admin")
    for cap in SETTABLE:
        assert f'<label for="{cap.form_id}">{cap.label}</label>' in html
        assert f'<input id="{cap.form_id}" name="{cap.name}"' in html and f'id="{cap.form_id}-hint">{cap.hint}<' in html
    form = {cap.name: ", ".join(_good(cap)) if cap.type == NAMES else str(_good(cap)) for cap in SETTABLE}
    saved = admin_pages.set_quota(rt, caller, username="admin", values=form, csrf=caller.csrf)
    assert saved.status == 303
    stored = admin.get_quota(rt, username="admin")
    assert {cap.name: stored[cap.name] for cap in SETTABLE} == {cap.name: _good(cap) for cap in SETTABLE}


def _options(app: typer.Typer, *path: str) -> dict[str, str]:
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return {flag: param.help for param in command.params for flag in param.opts}


@pytest.mark.parametrize(("app", "path"), [(cmd_admin.app, ("quota", "set")), (cmd_console.app, ("quota", "set"))],
                         ids=["sf admin quota set", "sf console quota set"])
def test_both_quota_commands_take_every_settable_cap(app: typer.Typer, path: tuple[str, ...]) -> None:
    options = _options(app, *path)
    for cap in SETTABLE:
        assert all(options.get(flag) == cap.help for flag in cap.options), cap.name
    assert not {"--max-storage-gb"} & set(options)  # a cap without flags is set over the API only


def test_the_options_make_the_body_of_the_caps_given() -> None:
    seen: list[dict[str, Any]] = []
    probe = typer.Typer()

    @probe.command()
    @quota_options
    def run(name: str, quota: dict[str, Any]) -> None:
        seen.append({"name": name, **quota})

    args = ["bob"]
    for cap in SETTABLE:
        value = _good(cap)
        args += [cap.options[-1], ",".join(value) if cap.type == NAMES else str(value)]
    result = CliRunner().invoke(probe, args)
    assert result.exit_code == 0, result.output
    assert seen == [{"name": "bob", **{cap.name: _good(cap) for cap in SETTABLE}}]
    assert CliRunner().invoke(probe, ["bob"]).exit_code == 0 and seen[-1] == {"name": "bob"}  # none given: no key
    repeated = [flag for cap in SETTABLE if cap.type == NAMES for flag in (cap.options[0], "cpu", cap.options[0], "")]
    assert CliRunner().invoke(probe, ["bob", *repeated]).exit_code == 0
    assert seen[-1] == {"name": "bob", **{cap.name: ["cpu"] for cap in SETTABLE if cap.type == NAMES}}


def test_a_quota_prints_every_cap_and_lists_as_names() -> None:
    text = quota_text(QuotaView(1, 2, 3.0, 4.0, ("cpu", "h200")).to_dict())
    assert text.splitlines() == [f"{cap.name}: {'cpu, h200' if cap.type == NAMES else value}"
                                 for cap, value in zip(QUOTA_FIELDS, (1, 2, 3.0, 4.0, None, 0, 0.0), strict=True)]
    assert "allowed_profiles: (all)" in quota_text(QuotaView(1, 2, 3.0, 4.0).to_dict())


@pytest.mark.parametrize("cap", [cap for cap in QUOTA_FIELDS if cap.codes], ids=lambda cap: cap.name)
def test_mcp_explains_every_refusal_of_a_cap(cap: QuotaField) -> None:
    for code in cap.codes:
        assert code in FIXES, f"MCP has no fix for {code} ({cap.name})"
        if not cap.fix:
            continue  # explained by its code's own fixer (profiles: a profile the account may use)
        [bare] = explain([Problem("f", code, "m", "")])
        assert bare.fix == cap.fix.format(facts="")
        facts = {name: 7 for name in ("requested", "limit", "used")}
        [full] = explain([Problem("f", code, "m", "", facts)])
        assert full.fix == cap.fix.format(facts=cap.facts.format(**facts)) and " 7 " in full.fix


@pytest.mark.parametrize("cap", QUOTA_FIELDS, ids=lambda cap: cap.name)
def test_every_cap_is_shown_by_the_table_unlimited_at_its_unlimited_value(cap: Any) -> None:
    """The web quota page and MCP show a cap the same way: names joined (none: every one), 0 as unlimited, except
    a cap that only orders the queue, which has no unlimited value."""
    if cap.type == NAMES:
        assert (cap_text(cap.name, ()), cap_text(cap.name, ("cpu", "h200"))) == ("every profile", "cpu, h200")
        assert cap_text(cap.name, (), every="all") == "all"
    elif Effect.ORDER in cap.effects:
        assert (cap_text(cap.name, 0), cap_text(cap.name, 3)) == ("0", "3")
    else:
        assert (cap_text(cap.name, cap.zero()), cap_text(cap.name, 2)) == ("unlimited", "2")
    assert cap_text("not_a_cap", 0) == "0"

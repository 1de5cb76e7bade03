"""Hub caches: each account's own, and same-named accounts of two consoles on one machine never share one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from starforge.console.app import build_console
from starforge.console.runtime import console_identity
from starforge.console.scheduler.prepare import _hub_cache
from starforge.console.services.context import Runtime
from starforge.console.settings import load_settings
from starforge.engines import Isolation


def _runtime(state: Path, hub: Path) -> Runtime:
    settings = load_settings(state_dir=state, run_background=False)
    settings = replace(settings, runtimes=replace(settings.runtimes, cache_dir=hub.parent / "rt", hub_cache=hub))
    return build_console(settings).runtime


def test_a_consoles_identity_is_kept_in_its_state_folder(tmp_path: Path) -> None:
    first = console_identity(tmp_path / "a")
    assert console_identity(tmp_path / "a") == first  # kept across restarts
    assert console_identity(tmp_path / "b") != first
    (tmp_path / "a" / "console.id").write_text("../../etc\n")  # a damaged file is replaced, never used as a path
    assert console_identity(tmp_path / "a") not in (first, "../../etc")


def test_same_named_accounts_of_two_consoles_get_two_hub_caches(tmp_path: Path) -> None:
    hub = tmp_path / "cache" / "hub"
    one, two = _runtime(tmp_path / "one", hub), _runtime(tmp_path / "two", hub)
    paths = Isolation.none(tmp_path).job_paths(tmp_path / "run")
    mine, theirs = _hub_cache(one, "alice", paths), _hub_cache(two, "alice", paths)
    assert mine.source != theirs.source
    assert mine.source.parent.parent == theirs.source.parent.parent == hub
    assert _hub_cache(one, "bob", paths).source.parent == mine.source.parent  # one console: one folder per account
    assert oct(mine.source.stat().st_mode & 0o777) == "0o700"

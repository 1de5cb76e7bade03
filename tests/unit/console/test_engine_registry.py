"""The engine registry: settings parsing and engine construction loop over it, so an engine registered the way
`docs/internals.md` shows (one folder, one entry; here `tests/standin_engine.py`) is named by a settings file,
refused with its own reader's messages, built by the console and routed to by its refs."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from starforge.console.app import build_console
from starforge.console.background import build_engines
from starforge.console.settings import SettingsError, load_settings
from starforge.engines import Isolation, registry
from tests.standin_engine import ENGINE, StandIn, StandInSettings

CONFIG = "executor: standin\nexecutors:\n  standin: {slots: 3}\n  series: {h200: slurm}\n"


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "console.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_built_in_engines_are_the_registrys() -> None:
    assert registry.names() == ("local", "slurm", "ray")
    assert set(registry.default_settings()) == {"local", "slurm", "ray"}


def test_an_unknown_engine_is_refused_with_the_registrys_names(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"^executor: unknown engine 'standin' \(known: local, slurm, ray\)$"):
        load_settings(state_dir=tmp_path, executor="standin")
    config = _config(tmp_path, CONFIG)
    with pytest.raises(SettingsError, match=r"^executors: unknown engines standin \(known: local, slurm, ray; and "
                                            r"`series`, which maps series to engines\)$"):
        load_settings(config, state_dir=tmp_path / "state")


def test_a_registered_engine_is_named_read_and_listed_by_the_settings(tmp_path: Path) -> None:
    with registry.registered(ENGINE):
        settings = load_settings(_config(tmp_path, CONFIG), state_dir=tmp_path / "state")
        assert settings.engines() == ("slurm", "standin") and settings.engine_of("cpu") == "standin"
        assert settings.engine_config("standin") == StandInSettings(3)
        assert load_settings(state_dir=tmp_path / "state", executor="standin").engine_config("standin") == \
            StandInSettings()  # its defaults when the file names none
        bad = _config(tmp_path, "executors:\n  standin: {slots: 0}\n")
        with pytest.raises(SettingsError, match=r"^executors.standin.slots: must be a number of slots from 1 to 64$"):
            load_settings(bad, state_dir=tmp_path / "state")
        with pytest.raises(SettingsError, match=r"\(known: local, slurm, ray, standin\)"):
            load_settings(state_dir=tmp_path / "state", executor="nowhere")
    assert registry.names() == ("local", "slurm", "ray")  # gone again after the block


def test_a_name_is_registered_once() -> None:
    with registry.registered(ENGINE), pytest.raises(ValueError, match="cannot be registered"):
        registry.register(ENGINE)
    for name in ("local", "series", "a:b", ""):
        with pytest.raises(ValueError, match="cannot be registered"):
            registry.register(registry.Engine(name, ENGINE.defaults, ENGINE.read, ENGINE.build))


def test_the_console_builds_a_registered_engine_and_routes_its_jobs_to_it(tmp_path: Path) -> None:
    with registry.registered(ENGINE):
        settings = load_settings(_config(tmp_path, "executor: standin\nexecutors:\n  standin: {slots: 3}\n"),
                                 state_dir=tmp_path / "state")
        engines = build_engines(settings, Isolation.none(settings.state_dir))
        assert isinstance(engines.engines["standin"], StandIn)
        assert engines.for_ref("standin:local:1:2:/runs/x") is engines.engines["standin"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # alembic's, about its own configuration
            console = build_console(settings)  # background work on: the engines come from the registry
    try:
        assert console.engines is not None and set(console.engines.engines) == {"standin"}
        assert dict(console.runtime.capacity) == {"cpu": 3}  # what its engine declares, not the settings' default
        assert not console.isolation.sandboxed  # no local engine: nothing runs in the console's own sandbox
    finally:
        console.runtimes.shutdown()
        console.runtime.db.dispose()

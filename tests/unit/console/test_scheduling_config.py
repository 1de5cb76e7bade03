"""The scheduling keys of the console configuration: a wrong value stops the console at start, with its key named."""

from __future__ import annotations

from pathlib import Path

import pytest

from starforge.console.scheduling_config import FairShareSettings, PreemptionSettings, RestartSettings
from starforge.console.settings import SettingsError, load_settings


def _load(tmp_path: Path, text: str) -> object:
    config = tmp_path / "console.yaml"
    config.write_text(text, encoding="utf-8")
    return load_settings(config, state_dir=tmp_path / "state")


def test_the_defaults_keep_preemption_off_and_fair_share_on(tmp_path: Path) -> None:
    settings = load_settings(state_dir=tmp_path / "state")
    assert settings.preemption == PreemptionSettings("off", 120.0) and not settings.preemption.on
    assert settings.fair_share == FairShareSettings(True, 168.0, 1.0)
    assert settings.restarts == RestartSettings(3, 3)


def test_the_keys_are_read(tmp_path: Path) -> None:
    settings = _load(tmp_path, "preemption: {policy: fair-share, grace_seconds: 30}\n"
                               "fair_share: {half_life_hours: 24, default_weight: 2}\n"
                               "restarts: {max_restarts: 5, after_loss: 0}\n")
    assert settings.preemption == PreemptionSettings("fair-share", 30.0)  # type: ignore[attr-defined]
    assert settings.fair_share.half_life_seconds == 24 * 3600  # type: ignore[attr-defined]
    assert settings.restarts == RestartSettings(5, 0)  # type: ignore[attr-defined]
    assert _load(tmp_path, "preemption: {policy: off}\n").preemption.policy == "off"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("text", "message"), [
    ("preemption: {policy: always}", "preemption.policy: must be one of off, priority, fair-share, not 'always'"),
    ("preemption: {grace_seconds: -5}", "preemption.grace_seconds: must be 0 or more, not -5"),
    ("preemption: {grace_seconds: soon}", "preemption.grace_seconds: must be a number of seconds, not 'soon'"),
    ("preemption: {policy: priority, grace: 10}", "preemption.grace: unknown key"),
    ("preemption: priority", "preemption: must be a mapping"),
    ("fair_share: {half_life_hours: 0}", "fair_share.half_life_hours: must be greater than 0"),
    ("fair_share: {enabled: maybe}", "fair_share.enabled: must be true or false"),
    ("fair_share: {default_weight: -1}", "fair_share.default_weight: must be greater than 0"),
    ("restarts: {max_restarts: -1}", "restarts.max_restarts: must be a whole number ≥ 0"),
    ("restarts: {after_loss: 1.5}", "restarts.after_loss: must be a whole number ≥ 0"),
])
def test_a_wrong_value_is_refused_with_its_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SettingsError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        _load(tmp_path, text + "\n")

"""`--since` reads durations back from now and dates; anything else is a usage error naming examples."""

from __future__ import annotations

from datetime import datetime

import pytest

from starforge.cli._output import Output
from starforge.cli._since import parse_since


@pytest.mark.parametrize(("text", "back"), [("90s", 90), ("30m", 1800), ("2h", 7200), ("3d", 259200), ("1w", 604800),
                                            ("1.5h", 5400)])
def test_durations_count_back_from_now(text: str, back: float) -> None:
    assert parse_since(text, Output(as_json=False), now=1_000_000.0) == 1_000_000.0 - back


def test_a_date_is_local_midnight() -> None:
    assert parse_since("2026-12-01", Output(as_json=False)) == datetime(2026, 12, 1).timestamp()


def test_anything_else_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_since("yesterday-ish", Output(as_json=False))
    assert exited.value.code == 2 and "30m, 2h" in capsys.readouterr().err

"""The policy stage as a whole: the base job of these tests passes every check, and every check has its module."""

from __future__ import annotations

from pathlib import Path

from starforge.console.services.admission import checks
from starforge.console.services.admission.pipeline import POLICY_CHECKS

from .contexts import context

HERE = Path(__file__).parent


def test_the_base_context_passes_every_policy_check() -> None:
    ctx = context()
    assert {check.__name__: check(ctx) for check in POLICY_CHECKS} == {check.__name__: [] for check in POLICY_CHECKS}


def test_every_policy_check_has_direct_tests() -> None:
    assert sorted(checks.__all__) == sorted(check.__name__ for check in POLICY_CHECKS)
    missing = [name for name in checks.__all__ if not (HERE / f"test_{name}.py").is_file()]
    assert missing == [], f"add tests/unit/console/admission/test_<check>.py for {missing}"

"""The role policy: one table of what admin, operator and viewer may do; unknown roles may only read."""

from __future__ import annotations

import pytest

from starforge.console.services.accounts import roles
from starforge.console.services.accounts.credentials import UserView

POLICY = (roles.can_admin, roles.sees_all_jobs, roles.sees_all_data, roles.can_submit, roles.can_stop,
          roles.can_publish)
TABLE = {
    "admin": (True, True, True, True, True, True),
    "operator": (False, False, False, True, True, True),
    "viewer": (False, False, False, False, False, False),
    "": (False, False, False, False, False, False),
    "root": (False, False, False, False, False, False),
}


def _user(role: str, user_id: int = 1, username: str = "alice") -> UserView:
    return UserView(user_id, username, role, "", False)


@pytest.mark.parametrize(("role", "expected"), TABLE.items())
def test_each_role_gets_exactly_its_rights(role: str, expected: tuple[bool, ...]) -> None:
    assert tuple(rule(_user(role)) for rule in POLICY) == expected


def test_jobs_are_seen_by_their_owner_and_by_administrators_only() -> None:
    assert roles.can_see_job(_user("viewer", 7), 7)
    assert not roles.can_see_job(_user("operator", 7), 8)
    assert roles.can_see_job(_user("admin", 1), 8)


def test_namespaces_belong_to_their_account_and_to_administrators() -> None:
    assert roles.acts_for(_user("operator"), "alice")
    assert not roles.acts_for(_user("operator"), "bob")
    assert roles.acts_for(_user("admin"), "bob")


def test_the_account_module_knows_the_same_roles() -> None:
    from starforge.console.services.accounts import credentials as accounts

    assert accounts.ROLES == roles.ROLES == ("admin", "operator", "viewer")

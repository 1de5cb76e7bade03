"""What the API and services know about an account (`UserView`): a leaf every service may import without a circle.

Tier: shared (a value; no database).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["UserView"]


@dataclass(frozen=True)
class UserView:
    """What the API and services know about an account."""

    id: int
    username: str
    role: str
    email: str
    disabled: bool
    auth_source: str = "local"

    def to_dict(self) -> dict[str, object]:
        """Return the wire form used by whoami and the admin API."""
        return {
            "id": self.id,
            "username": self.username,
            "role": self.role,
            "email": self.email,
            "disabled": self.disabled,
            "auth_source": self.auth_source,
        }

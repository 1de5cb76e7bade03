"""Persistence: rows (`models`), the database handle with its per-backend differences (`db`), migrations."""

from .db import Database

__all__ = ["Database"]

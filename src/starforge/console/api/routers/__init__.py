"""Routers of the console API, one module per area."""

__all__: list[str] = []

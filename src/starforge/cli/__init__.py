"""`sf`: thin commands over `starforge.lab` and `starforge.client`, with one output owner (`Output`)."""

__all__: list[str] = []

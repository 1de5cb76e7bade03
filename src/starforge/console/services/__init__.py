"""Console services: domain logic over the store; they raise `errors.*`, never HTTP types."""

__all__: list[str] = []

"""HTTP adapters of the console: routers resolve the caller and the body, call one service, return its result."""

__all__: list[str] = []

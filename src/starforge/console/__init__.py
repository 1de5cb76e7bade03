"""The StarForge console: the control plane that admits, stores and runs forge/v2 jobs."""

__all__ = ["create_app", "load_settings", "serve"]


def __getattr__(name: str) -> object:
    if name == "create_app":
        from .app import create_app

        return create_app
    if name == "serve":
        from .server import serve

        return serve
    if name == "load_settings":
        from .settings import load_settings

        return load_settings
    raise AttributeError(name)

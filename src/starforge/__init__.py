"""StarForge: turn an experiment folder into a post-training job, and refuse early what would fail later."""

__version__ = "0.4.0"

__all__ = ["__version__"]

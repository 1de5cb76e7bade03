"""StarForge: turn an experiment folder into a post-training job, and refuse early what would fail later."""

__version__ = "0.4.0"
# The name to install it by: `starforge` on PyPI is an unrelated project. The import package and the `sf` command
# keep the name starforge.
DISTRIBUTION = "starforge-platform"

__all__ = ["DISTRIBUTION", "__version__"]

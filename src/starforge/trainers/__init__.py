"""Reporting from real trainers: a Transformers `TrainerCallback` and the TRL entry shim that installs it.

Importing this package never imports torch or transformers: `StarForgeCallback` is built on first use.
"""

from ._callback import MODEL_DIR, ReportingState, metric_points, model_dir, starforge_callback
from ._install import install

__all__ = ["MODEL_DIR", "ReportingState", "install", "metric_points", "model_dir", "starforge_callback"]

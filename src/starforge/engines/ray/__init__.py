"""The Ray engine: its settings, the pure rendering of a job's Jobs API submission, and the executor (imports ray)."""

from .config import RaySettings, ray_settings_from
from .submission import PLACEMENT_VARIABLE, RaySubmission, placement_for, render_submission

__all__ = ["PLACEMENT_VARIABLE", "RaySettings", "RaySubmission", "placement_for", "ray_settings_from",
           "render_submission"]

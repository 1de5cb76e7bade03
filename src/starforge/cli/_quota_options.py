"""The quota options shared by `sf console quota set` (local state) and `sf admin quota set` (over the API), the body
they make, and how a quota prints: one definition, so the two commands cannot drift apart."""

from __future__ import annotations

from typing import Annotated, Any

import typer

__all__ = ["DailyGpuHours", "Gpus", "Jobs", "MaxJobHours", "Priority", "Profiles", "quota_text", "quota_values"]

Gpus = Annotated[int | None, typer.Option("--gpus", help="max concurrent GPUs (0 = unlimited)")]
Jobs = Annotated[int | None, typer.Option("--jobs", help="max concurrent jobs (0 = unlimited)")]
DailyGpuHours = Annotated[float | None, typer.Option("--daily-gpu-hours", help="GPU hours per UTC day (0 = unlimited)")]
Priority = Annotated[int | None, typer.Option("--priority", help="queue priority (higher first)")]
MaxJobHours = Annotated[float | None, typer.Option("--max-job-hours",
                                                   help="wall-time limit of each job in hours (0 = none)")]
Profiles = Annotated[list[str] | None, typer.Option(
    "--profile", "--profiles", help="allowed profiles: repeat, or a comma list such as cpu,h200 ('' = all)")]


def quota_values(*, gpus: int | None, jobs: int | None, daily_gpu_hours: float | None, priority: int | None,
                 max_job_hours: float | None, profiles: list[str] | None) -> dict[str, Any]:
    """Return the quota keys the options set (the console keeps every other key's value)."""
    values: dict[str, Any] = {}
    for key, value in (("max_concurrent_gpus", gpus), ("max_concurrent_jobs", jobs),
                       ("daily_gpu_hours", daily_gpu_hours), ("priority", priority),
                       ("max_job_hours", max_job_hours)):
        if value is not None:
            values[key] = value
    if profiles is not None:
        values["allowed_profiles"] = [name.strip() for item in profiles for name in item.split(",") if name.strip()]
    return values


def quota_text(quota: dict[str, Any]) -> str:
    """Return a quota as `key: value` lines (a list joined by commas; no list means every profile)."""
    lines = []
    for key, value in quota.items():
        if key == "allowed_profiles":
            value = ", ".join(str(v) for v in value) if value else "(all)"
        lines.append(f"{key}: {value}")
    return "\n".join(lines)

"""What the jobs list shows of a job beyond its stored fields: its duration, its primary metric's last value, its
attempts, the note worth reading and its marks (sweep run, follow-up), as text the page and its live updates share.

Tier: shared (pure: no database, no HTTP). The page renders these strings and the live JSON sends the same ones,
so a refreshed cell reads exactly as the server-rendered one; "now" is passed in, never read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..services.jobs.queries import JobRow
from ..services.jobs.rows import ACTIVE, WAITING
from .render import span_text

__all__ = ["COLUMNS", "Column", "JobLine", "Mark", "attempts_text", "duration_text", "line_of", "live_cells",
           "marks_of", "metric_heading", "metric_text", "note_text", "quiet_note"]


@dataclass(frozen=True)
class Column:
    """A column the reader may hide: its key (the `data-col` of its cells) and its heading."""

    key: str
    label: str


COLUMNS = (Column("status", "Status"), Column("exp", "Experiment"), Column("recipe", "Recipe"),
           Column("profile", "Profile"), Column("gpus", "GPUs"), Column("submitted", "Submitted"),
           Column("duration", "Duration"), Column("metric", "Primary metric"), Column("attempts", "Attempts"),
           Column("note", "Note"))
_QUIET = ("succeeded", "running")  # their stored reason ("exit code 0", "started on the local executor") says nothing


class Mark(NamedTuple):
    """A mark beside a job's name: its text, the page it links to and what it says to a screen reader."""

    text: str
    href: str
    label: str


def duration_text(row: JobRow, now: float) -> str:
    """Return how long the job ran (finished: end − start), runs (active: since its start), or has waited (waiting,
    never started: "waiting 12 min 05 s"); "waiting" for a requeued job, "" when none of these applies."""
    if row.status in WAITING:
        return "waiting" if row.started_at else f"waiting {span_text(now - row.submitted_at)}"
    if not row.started_at:
        return ""
    if row.finished_at:
        return span_text(row.finished_at - row.started_at)
    return span_text(now - row.started_at) if row.status in ACTIVE else ""


def metric_text(row: JobRow, *, named: bool) -> str:
    """Return the last value of the job's primary metric (4 significant digits), prefixed by the metric's name when
    `named` (the listed jobs do not all share one metric); "" when its recipe declares none or none was reported."""
    if row.metric_value is None:
        return ""
    value = f"{row.metric_value:.4g}"
    return f"{row.metric} {value}" if named else value


def metric_heading(rows: Sequence[JobRow]) -> tuple[str, bool]:
    """Return the metric column's heading and whether its cells name their metric: the metric itself when every
    listed job with one shares it (e.g. `train/reward`), else "Primary metric" with the names in the cells."""
    metrics = {row.metric for row in rows if row.metric}
    if len(metrics) == 1:
        return metrics.pop(), False
    return "Primary metric", bool(metrics)


def attempts_text(row: JobRow) -> str:
    """Return the job's attempts when it started more than once ("3 (2 restarts)": restarts after a failure, of
    all its starts), else ""."""
    if row.attempts <= 1:
        return ""
    restarts = f" ({row.restarts} restart{'s' if row.restarts != 1 else ''})" if row.restarts else ""
    return f"{row.attempts}{restarts}"


def quiet_note(status: str, message: str) -> str:
    """Return a job's stored reason where it tells something (why it waits, is held or failed, who stopped it,
    what its engine says while it starts), "" for a job that runs or succeeded (the jobs list and a job's page)."""
    return "" if status in _QUIET else message


def note_text(row: JobRow) -> str:
    """Return the note of a listed job (`quiet_note`)."""
    return quiet_note(row.status, row.message)


def marks_of(row: JobRow) -> tuple[Mark, ...]:
    """Return the marks beside the job's name: "sweep" linking to its sweep; a follow-up's action linking to the job
    it follows."""
    marks = []
    if row.sweep_id:
        marks.append(Mark("sweep", f"/ui/sweeps/{row.sweep_id}", f"run of sweep {row.sweep_id}"))
    if row.action and row.parent_id:
        marks.append(Mark(row.action, f"/ui/jobs/{row.parent_id}", f"{row.action} of job {row.parent_id}"))
    return tuple(marks)


class JobLine(NamedTuple):
    """A listed job with the text of its computed cells and its marks, as the page renders it."""

    job: JobRow
    duration: str
    metric: str
    attempts: str
    note: str
    marks: tuple[Mark, ...]


def line_of(row: JobRow, now: float, *, named: bool) -> JobLine:
    """Return the job's line: its duration at `now`, metric value (named or not), attempts, note and marks."""
    return JobLine(row, duration_text(row, now), metric_text(row, named=named), attempts_text(row), note_text(row),
                   marks_of(row))


def live_cells(line: JobLine) -> dict[str, str]:
    """Return what the live updates refresh of a line: `{job_ref, status, message (the note), duration, metric,
    attempts}`."""
    return {"job_ref": line.job.job_ref, "status": line.job.status, "message": line.note, "duration": line.duration,
            "metric": line.metric, "attempts": line.attempts}

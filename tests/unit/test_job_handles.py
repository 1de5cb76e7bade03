"""One rule for a job handle (`starforge.handles`): `sf` and the SDK (`starforge.client`) and MCP (both backends)
name the same job for the same handle, and an experiment name shared by several jobs names the newest."""

from __future__ import annotations

from typing import Any

import pytest

from starforge.client import AmbiguousJob, Job, NotFound
from starforge.client._jobs import resolve
from starforge.mcp import BackendError, JobRow, resolve_handle

ROWS: list[dict[str, Any]] = [  # newest first, as the console lists them
    {"job_ref": "r-3c00000000", "run_id": "r-3c00000000", "name": "grpo", "exp": "experiments/grpo"},
    {"job_ref": "slurm-77", "run_id": "r-2b00000000", "name": "grpo", "exp": "experiments/grpo"},
    {"job_ref": "r-1a00000000", "run_id": "r-1a00000000", "name": "sft", "exp": "experiments/sft"},
    {"job_ref": "r-0z00000000", "run_id": "r-0z00000000", "name": "grpo-long", "exp": "experiments/grpo-long"},
]


def _client(handle: str) -> str:
    try:
        return resolve([Job.from_row(r) for r in ROWS], handle).ref
    except AmbiguousJob:
        return "ambiguous"
    except NotFound:
        return "none"


def _mcp(handle: str) -> str:
    rows = [JobRow.of(r, terminal=False, succeeded=False) for r in ROWS]
    try:
        return resolve_handle(rows, handle).ref
    except BackendError as exc:
        return {"AmbiguousJob": "ambiguous", "NotFound": "none"}[exc.kind]


@pytest.mark.parametrize(("handle", "named"), [
    ("grpo", "r-3c00000000"),            # an experiment name of two jobs: the newest
    ("experiments/grpo", "none"),        # the handle is the name, not the path
    ("r-2b00000000", "slurm-77"),        # an exact run id
    ("slurm", "slurm-77"),               # a unique prefix
    ("sf", "r-1a00000000"),              # a unique prefix of a name
    ("grpo-l", "r-0z00000000"),
    ("r-", "ambiguous"),                 # a prefix of several names none
    ("nothing", "none"),
])
def test_the_client_and_mcp_name_the_same_job(handle: str, named: str) -> None:
    assert _client(handle) == named
    assert _mcp(handle) == named

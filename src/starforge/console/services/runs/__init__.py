"""What a run is made of, where it comes from and why two runs differ: `inputs`, `lineage`, `diff`.

Tier: use case (each public function owns one read transaction; no HTTP). Only the caller's own runs are read: any
other is a NotFound, as `jobs.queries.find_job` decides.
"""

from .diff import diff_runs
from .inputs import flat_inputs, run_inputs
from .lineage import lineage

__all__ = ["diff_runs", "flat_inputs", "lineage", "run_inputs"]

"""Admission of a follow-up job: the policy checks that still apply to a child of an admitted parent.

Tier: query (runs over the caller's session, the scheduler's; never begins or commits a transaction).

A follow-up (`spec.lifecycle.on_success`) is derived by the console from its parent's admitted spec: same owner,
names, experiment, recipe and bundle; one `lifecycle` pool shaped by the recipe's `lifecycle_resources`; and the
parent's latest checkpoint as its start. What the deployment may have changed since the parent was admitted, or
what the child's new shape may break, is checked again, in `POLICY_CHECKS` order:

- names (`check_names`): the names that become folders; the rules are code, re-checking them costs nothing;
- image allowlist (`check_image`): an administrator may have withdrawn the registry since;
- cluster paths (`check_cluster_paths`): the child is shown the parent's cluster-path base model again, and the
  operator may have changed `model_roots` since;
- profile and pools (`check_profiles`): the profile may have left the registry or the account's allowed profiles;
- runnable framework (`check_runtime`): the child's lifecycle pool may be on another series (a GPU-only framework
  on a CPU series), and the operator may have changed `runtimes` or `framework_dirs` since;
- quota (`check_quota`): the child's GPUs against `max_concurrent_gpus` — its shape is new, and a job above the cap
  could never start.

Deliberately exempt (each entry of `EXEMPT` says why):
- stages B–D (contract, catalog handshake, recipe gates): the child is built by the console, not sent by a
  client; the parent passed them, and the child's action must be one of the served recipe's lifecycle entries;
- `check_init_from`, `check_data`, `check_plugins`: a follow-up starts from the parent's checkpoint, resolved by
  the console, and is given no data or plugin directories, so the spec's references are not used by it;
- `check_bundle`: the child runs the parent's stored bundle, inspected when the parent was admitted;
- the daily GPU-hour budget (`quota_exhausted` from `check_quota`): it limits new submissions; the pipeline was
  admitted with its parent, and refusing its last step would waste the run it finishes;
- the account's role and maintenance mode: the parent's submission authorised its on_success steps; a disabled
  account gets no follow-ups at all (its jobs are stopped, see `followups.create_followups`).
  A follow-up asked for on request (`followup_requests`) checks both when it is asked, as a submission does.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from ....contract import JobSpec, Problem
from ...settings import Settings
from ..accounts.credentials import UserView
from ..quota.caps import get_quota
from ..quota.policy import FOLLOWUP_EXEMPT_CODES
from .checks import (
    check_benchmarks,
    check_bundle,
    check_cluster_paths,
    check_data,
    check_engines,
    check_gpu_settings,
    check_image,
    check_init_from,
    check_names,
    check_placeable,
    check_plugins,
    check_profiles,
    check_quota,
    check_runtime,
)
from .context import AdmissionContext, Resolutions

__all__ = ["EXEMPT", "EXEMPT_CODES", "FOLLOWUP_CHECKS", "admit_followup"]

FOLLOWUP_CHECKS = (check_names, check_image, check_cluster_paths, check_profiles, check_engines, check_runtime,
                   check_quota)
EXEMPT = {
    check_benchmarks: "a benchmark follow-up's suites are resolved when the console builds it "
                      "(`jobs.benchmark_followups.suite_problems`, refused at spec.evaluation.suites)",
    check_init_from: "the child starts from its parent's latest checkpoint, which the console resolves itself",
    check_data: "the child is given no data directories, so the spec's data references are not used by it",
    check_plugins: "the child is given no plugin directories, so the spec's plugins are not used by it",
    check_bundle: "the child runs the parent's stored bundle, inspected when the parent was admitted",
    check_gpu_settings: "the child runs a lifecycle action (export, eval), not the trainer those settings configure",
    check_placeable: "the parent's submitter chose whether its jobs may wait for capacity; a child no capacity serves "
                     "waits as `pending` with the reason rather than failing the run it finishes",
}
# Problems of a re-checked rule that do not apply to a child: the quota policy's caps that exempt follow-ups (the
# daily budget limits new submissions, and the pipeline was admitted with its parent).
EXEMPT_CODES = FOLLOWUP_EXEMPT_CODES


def admit_followup(
    db: Session, settings: Settings, *, spec: JobSpec, owner: UserView, profile: str, recipe: Any
) -> list[Problem]:
    """Return every problem of the follow-up checks for a child spec (empty when it may be queued)."""
    ctx = AdmissionContext(
        spec=spec,
        user=owner,
        settings=settings,
        profile=profile,
        quota=get_quota(db, owner, settings.quota),
        ledger=None,  # the daily budget does not limit a follow-up (EXEMPT_CODES)
        resolutions=Resolutions(),
        recipe=recipe,
    )
    found = [problem for check in FOLLOWUP_CHECKS for problem in check(ctx)]
    return [problem for problem in found if problem.code not in EXEMPT_CODES]

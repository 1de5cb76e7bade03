"""What a service serves: a model reference resolved to the folder (or hub id) its job is shown, or refused at `model`.

Tier: query (runs over the caller's session; never begins or commits a transaction).

The four forms, tried in this order:
- `run:<run_id>`: the caller's own run; its last `hf_export` artifact (else its last merged or final trained
  `model`), else its latest checkpoint;
- `<owner>/<name>@<version>`: a registered model the caller may read (the model registry);
- an absolute path: a folder under the operator's `model_roots` (the rule of `jobs.model_paths`);
- `<org>/<name>` (or a bare name), no `@`: a hub id, passed to the server as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session

from ....contract import ArtifactRef, Problem, is_cluster_path, is_model_ref, parse_versioned_ref
from ....wire import RUN_MODEL_KINDS
from ...store.models import Job
from ..accounts.credentials import UserView
from ..errors import Rejected
from ..jobs.model_paths import resolve_model_folder
from ..registries import artifacts, data

__all__ = ["FIELD", "ModelChoice", "resolve_model"]

FIELD = "model"
TITLE = "The service was refused"
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?")


@dataclass(frozen=True)
class ModelChoice:
    """A resolved reference: `base` goes to `spec.model.base` (a registered model, a folder or a hub id; "" for a
    run's), `init_from` is a run's model folder on the console machine, `path` what the service shows as
    `model_path` ("" for a hub id) and `run_id` the run it comes from."""

    ref: str
    base: str = ""
    init_from: str = ""
    path: str = ""
    run_id: str = ""


def _refuse(code: str, message: str, hint: str, got: str) -> Rejected:
    return Rejected(TITLE, [Problem(FIELD, code, message, hint, {"got": got[:200]})], status=422)


def _run_model(db: Session, user: UserView, run_id: str) -> str:
    """Return the folder of the run's model in `RUN_MODEL_KINDS` order ("" when it registered none), resolved as
    `init_from` is: a folder still inside the run's output folder, which the caller may read."""
    for kind in RUN_MODEL_KINDS:
        found = artifacts.resolve(db, ArtifactRef(run_id, kind), user)
        if found is not None:
            return found.path
    return ""


def _from_run(db: Session, user: UserView, ref: str, run_id: str) -> ModelChoice:
    job = db.get(Job, run_id)
    if job is None or job.user_id != user.id:
        raise _refuse("model_run_unknown", f"no run {run_id!r} of yours", "`sf job ls` lists your runs", ref)
    path = _run_model(db, user, job.id)
    if not path:
        raise _refuse("model_no_checkpoint", f"run {job.id} has no exported model and no checkpoint to serve",
                      f"`sf job artifacts {job.id}` lists what it registered; serve a run that saved a checkpoint",
                      ref)
    if not Path(path).is_dir():
        raise _refuse("model_no_checkpoint", f"the model folder of run {job.id} is gone from the console",
                      "serve another run, or push the model with `sf model push`", ref)
    return ModelChoice(ref=ref, init_from=path, path=path, run_id=job.id)


def resolve_model(db: Session, user: UserView, ref: str, *, model_roots: tuple[str, ...], state_dir: Path
                  ) -> ModelChoice:
    """Return what `ref` names for `user`; raise Rejected (422) at `model` with a hint when it names nothing."""
    text = ref.strip() if isinstance(ref, str) else ""
    if not text:
        raise _refuse("invalid_request", "model must be a non-empty string",
                      "run:<run_id>, <owner>/<name>@<version>, a folder under model_roots or a hub id", "")
    if text.startswith("run:"):
        return _from_run(db, user, text, text[4:].strip())
    if is_model_ref(text):
        parsed, problems = parse_versioned_ref(text, FIELD, version_required=True)
        found = data.resolve(db, "model", parsed, user) if parsed is not None and not problems else None
        if found is None:
            raise _refuse("model_unknown", f"model {text} is not registered or you may not read it",
                          "`sf model ls` lists the models you may use", text)
        return ModelChoice(ref=text, base=found.ref, path=found.path)
    if is_cluster_path(text):
        folder = resolve_model_folder(text, model_roots, state_dir)
        if not folder.ok:
            raise _refuse("model_path_refused", folder.refusal,
                          "name a folder under the console's model_roots (an operator sets them)", text)
        return ModelChoice(ref=text, base=text, path=folder.path)
    if _HUB_ID.fullmatch(text) and ".." not in text:
        return ModelChoice(ref=text, base=text)
    raise _refuse("model_unknown", f"{text[:200]!r} is not a model reference",
                  "run:<run_id>, <owner>/<name>@<version>, a folder under model_roots or a hub id (org/name)", text)

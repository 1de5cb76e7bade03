"""Database rows of the console (SQLAlchemy 2); services convert them to views, no route returns a row."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "Admission",
    "Artifact",
    "AssetGrant",
    "BenchmarkScore",
    "Base",
    "DataAsset",
    "DeviceCode",
    "Idempotency",
    "Job",
    "JobAttempt",
    "JobEvent",
    "Leadership",
    "Lock",
    "MetricPoint",
    "Plugin",
    "Quota",
    "Service",
    "ServiceKey",
    "Share",
    "ShareUsage",
    "Sweep",
    "Token",
    "User",
    "Webhook",
    "WebhookAttempt",
    "WebhookDelivery",
]

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))  # admin | operator | viewer
    email: Mapped[str] = mapped_column(String(255), default="")
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    auth_source: Mapped[str] = mapped_column(String(32), default="local")
    created_at: Mapped[float] = mapped_column(Float)


class Token(Base):
    """Every credential, stored as the SHA-256 of its secret: access, refresh, api (long-lived) and run tokens."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))  # access | refresh | api | run
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    family: Mapped[str] = mapped_column(String(32), default="")
    name: Mapped[str] = mapped_column(String(128), default="")
    run_id: Mapped[str] = mapped_column(String(32), default="")
    cli_version: Mapped[str] = mapped_column(String(64), default="")
    expires_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    revoked_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)
    last_used_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    __table_args__ = (Index("ix_tokens_family", "family"),)


class DeviceCode(Base):
    __tablename__ = "device_codes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    device_code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_code: Mapped[str] = mapped_column(String(16), unique=True)
    status: Mapped[str] = mapped_column(String(16))  # pending | approved | denied | consumed
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=True)
    device_info: Mapped[str] = mapped_column(Text, default="{}")
    interval: Mapped[int] = mapped_column(Integer)
    expires_at: Mapped[float] = mapped_column(Float)
    last_poll_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)
    client: Mapped[str] = mapped_column(String(64), default="", server_default="")  # the requester's peer address
    __table_args__ = (Index("ix_device_codes_client_expires", "client", "expires_at"),
                      Index("ix_device_codes_expires", "expires_at"))


class Quota(Base):
    __tablename__ = "quotas"
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    max_concurrent_gpus: Mapped[int] = mapped_column(Integer)
    max_concurrent_jobs: Mapped[int] = mapped_column(Integer)
    daily_gpu_hours: Mapped[float] = mapped_column(Float)
    max_storage_gb: Mapped[float] = mapped_column(Float)
    allowed_profiles: Mapped[str] = mapped_column(Text, default="[]")
    priority: Mapped[int] = mapped_column(Integer, default=0)
    max_job_hours: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")


class Lock(Base):
    """Named lock rows; `capacity` serialises every decision that takes quota or capacity (PostgreSQL FOR UPDATE)."""

    __tablename__ = "locks"
    name: Mapped[str] = mapped_column(String(32), primary_key=True)


class Leadership(Base):
    """The one row naming the console process that leads the scheduler: `epoch` (the fencing token) grows by one each
    time a process takes the lead (`services.leadership`)."""

    __tablename__ = "leadership"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)  # always 1
    epoch: Mapped[int] = mapped_column(Integer, default=0)
    holder: Mapped[str] = mapped_column(String(64), default="")  # the leading process's own id
    console_id: Mapped[str] = mapped_column(String(32), default="")  # its state folder's `console.id`
    host: Mapped[str] = mapped_column(String(255), default="")
    pid: Mapped[int] = mapped_column(Integer, default=0)
    since: Mapped[float] = mapped_column(Float, default=0.0)
    heartbeat: Mapped[float] = mapped_column(Float, default=0.0)


class Job(Base):
    """One admitted job. `status` changes only through `services.jobs.set_status`."""

    __tablename__ = "jobs"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # the run id, also the job_ref
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    username: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(255))
    exp: Mapped[str] = mapped_column(String(1024))
    project: Mapped[str] = mapped_column(String(255), default="")
    profile: Mapped[str] = mapped_column(String(64))
    recipe: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    waiting_for: Mapped[str] = mapped_column(String(16), default="")  # "" | quota | budget | capacity | series | sweep | maintenance
    requested_gpus: Mapped[int] = mapped_column(Integer)
    series_gpus: Mapped[str] = mapped_column(Text, default="{}")  # {"series": gpus}
    priority: Mapped[int] = mapped_column(Integer, default=0)
    spec_json: Mapped[str] = mapped_column(Text)
    meta_json: Mapped[str] = mapped_column(Text, default="{}")
    warnings_json: Mapped[str] = mapped_column(Text, default="[]")
    package_sha: Mapped[str] = mapped_column(String(80), default="")
    resolved_json: Mapped[str] = mapped_column(Text, default="{}")  # init_from path, corpus mount, plugin dirs
    parent_id: Mapped[str] = mapped_column(String(32), default="")
    action: Mapped[str] = mapped_column(String(32), default="")  # "" for training; export | eval for follow-ups
    run_dir: Mapped[str] = mapped_column(Text, default="")
    executor_ref: Mapped[str] = mapped_column(Text, default="")
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    stop_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    stop_reason: Mapped[str] = mapped_column(String(2000), default="", server_default="")
    log_offset: Mapped[int] = mapped_column(Integer, default=0)
    submitted_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    lease_owner: Mapped[str] = mapped_column(String(64), default="")
    lease_token: Mapped[str] = mapped_column(String(64), default="")
    lease_expires_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    sweep_id: Mapped[str] = mapped_column(String(160), default="", server_default="")  # "" when not in a sweep
    # attempts: each start of the job is one (a preempted, paused or restarted job starts again as the same job)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # attempts started so far
    max_restarts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # `sf submit --max-restarts`
    restarts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # automatic restarts after a failure
    # a checkpoint-and-stop asked of the running job: "" | preempt | pause; when, and by whom (a job id or a user)
    interrupt: Mapped[str] = mapped_column(String(16), default="", server_default="")
    interrupt_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    interrupt_by: Mapped[str] = mapped_column(String(255), default="", server_default="")
    resumed_from: Mapped[str] = mapped_column(Text, default="", server_default="")  # the current attempt's checkpoint
    resume_step: Mapped[int | None] = mapped_column(Integer, nullable=True)
    attempt_started_at: Mapped[float | None] = mapped_column(Float, nullable=True)  # when the current attempt started
    # the digest of spec.framework.image the job runs on, fixed at its first pull (later attempts keep it)
    image_digest: Mapped[str] = mapped_column(String(80), default="", server_default="")
    __table_args__ = (
        Index("ix_jobs_user_submitted", "user_id", "submitted_at"),
        Index("ix_jobs_status", "status"),
        Index("ix_jobs_sweep", "sweep_id"),
    )


class Sweep(Base):
    """A sweep of one account: its jobs carry its id (`jobs.sweep_id`, with their `user_id`); ids are per account, so
    two accounts may use the same one. `max_parallel` 0 means no limit of its own."""

    __tablename__ = "sweeps"
    id: Mapped[str] = mapped_column(String(160), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    exp: Mapped[str] = mapped_column(String(1024), default="")
    profile: Mapped[str] = mapped_column(String(64), default="")
    max_parallel: Mapped[int] = mapped_column(Integer, default=0)
    keys_json: Mapped[str] = mapped_column(Text, default="[]")  # the swept parameters, in order
    points_json: Mapped[str] = mapped_column(Text, default="[]")  # [{param: value text}] as submitted
    created_at: Mapped[float] = mapped_column(Float)
    __table_args__ = (Index("ix_sweeps_user_created", "user_id", "created_at"),)


class JobAttempt(Base):
    """One start of a job and how it ended (a job that is preempted, paused or restarted has several)."""

    __tablename__ = "job_attempts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)  # 1, 2, ...
    started_at: Mapped[float] = mapped_column(Float)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # "" while it runs | succeeded | failed | stopped | preempted | paused | lost | interrupted (the console restarted)
    outcome: Mapped[str] = mapped_column(String(16), default="")
    reason: Mapped[str] = mapped_column(Text, default="")
    resumed_from: Mapped[str] = mapped_column(Text, default="")  # the checkpoint it started from ("" for none)
    resume_step: Mapped[int | None] = mapped_column(Integer, nullable=True)
    gpus: Mapped[int] = mapped_column(Integer, default=0)
    executor_ref: Mapped[str] = mapped_column(Text, default="")
    epoch: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # the leader's fencing token when
    # it launched (0: before leadership existed)
    __table_args__ = (UniqueConstraint("job_id", "number"),)


class Share(Base):
    """An account's fair-share weight (an account without a row has the configured default weight)."""

    __tablename__ = "shares"
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    weight: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


class ShareUsage(Base):
    """An account's decayed GPU-seconds on one series, as of `at` (fair share's usage; ended attempts only)."""

    __tablename__ = "share_usage"
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    series: Mapped[str] = mapped_column(String(64), primary_key=True)
    gpu_seconds: Mapped[float] = mapped_column(Float)
    at: Mapped[float] = mapped_column(Float)


class JobEvent(Base):
    __tablename__ = "job_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    at: Mapped[float] = mapped_column(Float)
    from_status: Mapped[str] = mapped_column(String(16))
    to_status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    __table_args__ = (Index("ix_job_events_job", "job_id"),)


class Admission(Base):
    """The admission audit log: every decision, with account, time, verdict and problems."""

    __tablename__ = "admissions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    at: Mapped[float] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(16))  # submit | check
    verdict: Mapped[str] = mapped_column(String(16))  # accepted | queued | rejected | ok
    job_id: Mapped[str] = mapped_column(String(32), default="")
    exp: Mapped[str] = mapped_column(Text, default="")
    recipe: Mapped[str] = mapped_column(String(255), default="")
    problems_json: Mapped[str] = mapped_column(Text, default="[]")
    warnings_json: Mapped[str] = mapped_column(Text, default="[]")
    __table_args__ = (Index("ix_admissions_user_at", "user_id", "at"),)


class Idempotency(Base):
    __tablename__ = "idempotency"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(255))
    status_code: Mapped[int] = mapped_column(Integer)
    response_json: Mapped[str] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(Float)
    __table_args__ = (UniqueConstraint("user_id", "key", name="uq_idempotency_user_key"),)


class DataAsset(Base):
    """A registered corpus, dataset, volume or environment version mapped to a directory."""

    __tablename__ = "data_assets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    owner: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(128))
    version: Mapped[str] = mapped_column(String(128))
    path: Mapped[str] = mapped_column(Text)
    visibility: Mapped[str] = mapped_column(String(16), default="private")
    created_at: Mapped[float] = mapped_column(Float)
    __table_args__ = (UniqueConstraint("kind", "owner", "name", "version", name="uq_data_assets_ref"),)


class AssetGrant(Base):
    __tablename__ = "asset_grants"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    owner: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(128))
    username: Mapped[str] = mapped_column(String(64))
    __table_args__ = (UniqueConstraint("kind", "owner", "name", "username", name="uq_asset_grants_ref"),)


class Plugin(Base):
    __tablename__ = "plugins"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(128))
    version: Mapped[str] = mapped_column(String(128))
    kind: Mapped[str] = mapped_column(String(16), default="plugin")
    digest: Mapped[str] = mapped_column(String(80))
    summary: Mapped[str] = mapped_column(Text, default="")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    visibility: Mapped[str] = mapped_column(String(16), default="public")
    path: Mapped[str] = mapped_column(Text)
    size_bytes: Mapped[int] = mapped_column(Integer, default=0)
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[float] = mapped_column(Float)
    __table_args__ = (UniqueConstraint("owner", "name", "version", name="uq_plugins_ref"),)


class Artifact(Base):
    __tablename__ = "artifacts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))
    path: Mapped[str] = mapped_column(Text)
    format: Mapped[str] = mapped_column(String(64), default="")
    step: Mapped[int | None] = mapped_column(Integer, nullable=True)
    size_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)  # checkpoints pass 2 GiB
    metrics_json: Mapped[str] = mapped_column(Text, default="{}")
    created_at: Mapped[float] = mapped_column(Float)
    __table_args__ = (Index("ix_artifacts_run_kind", "run_id", "kind"),)


class MetricPoint(Base):
    __tablename__ = "metrics"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(255))
    step: Mapped[int | None] = mapped_column(Integer, nullable=True)
    value: Mapped[float] = mapped_column(Float)
    ts: Mapped[float] = mapped_column(Float)
    # (run_id, key, id): a run's series in order, and its last point of a key in one backward seek (jobs list)
    __table_args__ = (Index("ix_metrics_run_key_id", "run_id", "key", "id"),)


class Service(Base):
    """An inference service: the job that runs its OpenAI-compatible server (`job_id`, also the service id), what it
    serves, and when it stops itself. `expires_at` moves forward with use (`idle_ttl_s` after the last request) and
    with `extend`, never beyond `created_at` plus the operator's cap."""

    __tablename__ = "services"
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    model_ref: Mapped[str] = mapped_column(Text)  # what the user asked for: run:<id>, owner/name@v, a path, a hub id
    model_path: Mapped[str] = mapped_column(Text, default="")  # what it resolved to ("" for a hub id)
    server: Mapped[str] = mapped_column(String(32), default="")  # transformers | vllm
    gpus: Mapped[int] = mapped_column(Integer, default=0)
    idle_ttl_s: Mapped[float] = mapped_column(Float)
    created_at: Mapped[float] = mapped_column(Float)
    last_used_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    expires_at: Mapped[float] = mapped_column(Float)
    stopped_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    stop_reason: Mapped[str] = mapped_column(String(255), default="")
    __table_args__ = (Index("ix_services_user", "user_id"), Index("ix_services_expires", "expires_at"))


class ServiceKey(Base):
    """An API key of one service, for a tool: shown once, stored as its hash, revocable."""

    __tablename__ = "service_keys"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("services.job_id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64), default="")
    token_hash: Mapped[str] = mapped_column(String(128), unique=True)
    prefix: Mapped[str] = mapped_column(String(16), default="")  # the first characters, to tell keys apart
    created_at: Mapped[float] = mapped_column(Float)
    revoked_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    __table_args__ = (Index("ix_service_keys_job", "job_id"),)


class BenchmarkScore(Base):
    """One score a run reported for a benchmark suite (`POST …/ingest/benchmark`): `repeat` numbers the evaluation's
    repetitions (0 for the first), so their spread measures the evaluation's own variance."""

    __tablename__ = "benchmark_scores"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    benchmark: Mapped[str] = mapped_column(String(255))
    metric: Mapped[str] = mapped_column(String(255))
    value: Mapped[float] = mapped_column(Float)
    stderr: Mapped[float | None] = mapped_column(Float, nullable=True)
    repeat: Mapped[int] = mapped_column(Integer, default=0)
    runner: Mapped[str] = mapped_column(String(64), default="")
    model: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[float] = mapped_column(Float)
    __table_args__ = (Index("ix_benchmark_scores_run", "run_id"),
                      UniqueConstraint("run_id", "benchmark", "metric", "repeat", name="uq_benchmark_scores_point"))


class Webhook(Base):
    """An account's webhook: where its jobs' state changes are POSTed, which ones, and the salt its signing secret is
    derived from (with the console's key in the state folder; the secret itself is stored nowhere)."""

    __tablename__ = "webhooks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(Text)
    events: Mapped[str] = mapped_column(String(255))  # comma-separated event names
    salt: Mapped[str] = mapped_column(String(64))
    prefix: Mapped[str] = mapped_column(String(16), default="")  # the secret's first characters, to tell hooks apart
    created_at: Mapped[float] = mapped_column(Float)
    __table_args__ = (Index("ix_webhooks_user", "user_id"),)


class WebhookDelivery(Base):
    """One event for one hook (the outbox row, written in the transaction of the state change): its body, frozen
    when it was written, and where its delivery stands (`pending` until `delivered`, or `failed` after the last
    attempt); `next_at` is when it is due (also the sender's lease while an attempt is under way)."""

    __tablename__ = "webhook_deliveries"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    hook_id: Mapped[int] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    job_id: Mapped[str] = mapped_column(String(32))
    event: Mapped[str] = mapped_column(String(32))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(Float)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str] = mapped_column(Text, default="")
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    __table_args__ = (Index("ix_webhook_deliveries_due", "state", "next_at"),
                      Index("ix_webhook_deliveries_hook", "hook_id", "id"),
                      Index("ix_webhook_deliveries_user", "user_id", "id"))


class WebhookAttempt(Base):
    """One attempt of a delivery: when, the receiver's status code or the error, and when the next one is due."""

    __tablename__ = "webhook_attempts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("webhook_deliveries.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    at: Mapped[float] = mapped_column(Float)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str] = mapped_column(Text, default="")
    next_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    __table_args__ = (Index("ix_webhook_attempts_delivery", "delivery_id"),)


class MlflowMirror(Base):
    """A job's metrics mirrored to one MLflow run (`services.mirror`): where to, the MLflow run once made, the last
    point sent (`sent_point_id`, a `metrics.id`), the MLflow status last set, and the delivery's failures. One row per
    job: every attempt of the job logs to the same MLflow run."""

    __tablename__ = "mlflow_mirrors"
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    tracking_uri: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16))  # mirroring | done | refused | gave_up
    mlflow_run_id: Mapped[str] = mapped_column(String(64), default="")
    sent_point_id: Mapped[int] = mapped_column(Integer, default=0)
    attempt: Mapped[int] = mapped_column(Integer, default=0)  # the job's attempt `sent_point_id` is counted in
    run_status: Mapped[str] = mapped_column(String(16), default="")  # "" | RUNNING | FINISHED | FAILED | KILLED
    failures: Mapped[int] = mapped_column(Integer, default=0)  # failed deliveries in a row
    error: Mapped[str] = mapped_column(Text, default="")  # the last failure (or why the URL is refused)
    next_try_at: Mapped[float] = mapped_column(Float, default=0.0)
    lease_owner: Mapped[str] = mapped_column(String(64), default="")  # the process delivering it now
    lease_expires_at: Mapped[float] = mapped_column(Float, default=0.0)
    updated_at: Mapped[float] = mapped_column(Float, default=0.0)
    __table_args__ = (Index("ix_mlflow_mirrors_state", "state", "next_try_at"),)

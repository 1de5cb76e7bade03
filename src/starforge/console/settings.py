"""Console settings: one frozen object built from defaults, an optional YAML config file and command-line flags."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from starforge.contract import ProfileEntry
from starforge.wire.quota_fields import QuotaCaps

from ..engines import registry
from ..engines.images.config import ImageSettings, image_settings_from
from ..engines.isolation import IsolationConfig
from ..engines.kuberay_manifest import KubeRayConfig, kuberay_config_from
from ..engines.ray.config import RaySettings
from ..engines.runtimes.config import RuntimeSettings, runtime_settings_from
from ..engines.slurm.config import SlurmSettings
from .mirror_config import MlflowMirrorSettings, read_mlflow_mirror
from .notify_config import NotifySettings, read_notify
from .scheduling_config import (
    FairShareSettings,
    PreemptionSettings,
    RestartSettings,
    ServingSettings,
    read_fair_share,
    read_preemption,
    read_restarts,
    read_serving,
)

if TYPE_CHECKING:
    from ..engines.runtimes import Blocker

__all__ = ["CatalogSettings", "QuotaDefaults", "Settings", "SettingsError", "load_settings", "user_cache_dir"]

UNPLACEABLE = ("refuse", "queue")  # `admission.unplaceable`: what admission does with a job no capacity can serve


class SettingsError(ValueError):
    """Raised when the configuration file or flags are invalid (the console refuses to start)."""


class QuotaDefaults(QuotaCaps):
    """The quota a new account gets until an administrator sets its own: the quota table's defaults, changed under
    `quota:` (`starforge.wire.quota_fields`)."""


@dataclass(frozen=True)
class CatalogSettings:
    """Which recipe tree the console serves, with its digest scheme and core handshake values."""

    path: str | None = None
    digest_scheme: str = "manifest"
    core_version: str | None = None
    core_requirement: str | None = None
    disabled: tuple[str, ...] = ()


def _default_profiles(cpu_engine: str = "local") -> tuple[ProfileEntry, ...]:
    where = "on the console machine" if cpu_engine == "local" else f"on the {cpu_engine} cluster"
    return (
        ProfileEntry("cpu", "cpu", 1, 1, f"CPU slot {where}"),
        ProfileEntry("h200", "h200", 1, 8, "H200 x8"),
    )


def _default_capacity() -> dict[str, int]:
    return {"cpu": max(1, os.cpu_count() or 1)}


def user_cache_dir() -> Path:
    """Return StarForge's folder in the user cache: `$XDG_CACHE_HOME/starforge`, else `~/.cache/starforge`."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base) if base.strip() else Path.home() / ".cache").expanduser().resolve() / "starforge"


def _default_images() -> ImageSettings:
    return ImageSettings(cache_dir=user_cache_dir() / "images")


def _default_runtimes() -> RuntimeSettings:
    cache = user_cache_dir()
    return RuntimeSettings(cache_dir=cache / "runtimes", hub_cache=cache / "hub")


@dataclass(frozen=True)
class Settings:
    """Everything the console needs to run; `create_app(settings)` builds the application from it."""

    state_dir: Path
    host: str = "127.0.0.1"
    port: int = 8080
    database_url: str = ""
    public_url: str = ""
    # proxies (addresses or networks) whose X-Forwarded-For and X-Forwarded-Proto are believed; none by default, so
    # a client's address is the connection's peer and HTTPS is what the connection (or an https public_url) says
    trusted_proxies: tuple[str, ...] = ()
    catalog: CatalogSettings = field(default_factory=CatalogSettings)
    profiles: tuple[ProfileEntry, ...] = field(default_factory=_default_profiles)
    capacity: dict[str, int] = field(default_factory=_default_capacity)
    image_allowlist: tuple[str, ...] | None = None
    quota: QuotaDefaults = field(default_factory=QuotaDefaults)
    max_bundle_bytes: int = 512 * 1024 * 1024
    max_bundle_files: int = 20_000
    max_dataset_bytes: int = 8 * 1024**3  # one pushed dataset's upload (gzip tar), spooled to disk
    access_token_ttl: int = 3600
    refresh_token_ttl: int = 30 * 24 * 3600
    device_code_ttl: int = 900
    device_poll_interval: int = 5
    maintenance: bool = False
    maintenance_note: str = ""
    scheduler_interval: float = 0.5
    stop_grace_seconds: float = 10.0
    executor: str = "local"  # the engine of every series `engine_series` does not name (`sf console up --executor`)
    engine_series: dict[str, str] = field(default_factory=dict)  # `executors.series`: series → engine
    # `executors.<name>` of every registered engine (`engines.registry`), read by its own reader: name → settings
    engine_settings: Mapping[str, Any] = field(default_factory=registry.default_settings)
    profile_max_hours: dict[str, float] = field(default_factory=dict)  # wall-time limit per profile (`max_hours`)
    passthrough_env: dict[str, str] = field(default_factory=dict)
    framework_dirs: dict[str, str] = field(default_factory=dict)
    model_roots: tuple[str, ...] = ()  # folders whose sub-folders `spec.model.base` may name (none: no cluster paths)
    # `admission.unplaceable`: a job whose series has no capacity in this deployment is refused at admission
    # ("refuse"), unless its submitter allows it to wait; "queue" admits it as `pending` (capacity that appears later)
    unplaceable: str = "refuse"
    runtimes: RuntimeSettings = field(default_factory=_default_runtimes)  # recipe runtimes and the hub cache
    images: ImageSettings = field(default_factory=_default_images)  # `images:`: the image cache and registries
    kuberay: KubeRayConfig = field(default_factory=KubeRayConfig)  # `kuberay:`: how RayJob manifests render
    fair_share: FairShareSettings = field(default_factory=FairShareSettings)  # `fair_share:`: the queue's order
    preemption: PreemptionSettings = field(default_factory=PreemptionSettings)  # `preemption:`: off by default
    restarts: RestartSettings = field(default_factory=RestartSettings)  # `restarts:`: caps of automatic restarts
    serving: ServingSettings = field(default_factory=ServingSettings)  # `serving:`: the TTLs of inference services
    notify: NotifySettings = field(default_factory=NotifySettings)  # `notify:`: webhooks (reachable hosts, retries)
    mlflow: MlflowMirrorSettings = field(default_factory=MlflowMirrorSettings)  # `mlflow:`: metrics mirrored to MLflow
    run_background: bool = True
    config_file: str = ""  # where the configuration was read from (hidden from jobs)

    @property
    def db_url(self) -> str:
        """Return the SQLAlchemy URL: the configured one, else SQLite in the state directory."""
        return self.database_url or f"sqlite:///{self.state_dir / 'console.db'}"

    @property
    def accounts_changes(self) -> Path:
        """Return the change file every process on this state folder appends to when an account, a token or a
        quota changes (`store.signals`): what lets the console cache them and still revoke at once."""
        return self.state_dir / "accounts.changes"

    @property
    def base_url(self) -> str:
        """Return the URL jobs use to reach this console (ingest, judge)."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    def engine_of(self, series: str) -> str:
        """Return the engine that runs jobs of `series`: the one `executors.series` names, else the default."""
        return self.engine_series.get(series, self.executor)

    def engine_config(self, name: str) -> Any:
        """Return the settings of engine `name` (`executors.<name>`), its defaults when the configuration has none."""
        found = self.engine_settings.get(name)
        return found if found is not None else registry.get(name).defaults()

    def with_engine_config(self, name: str, config: Any) -> Settings:
        """Return these settings with engine `name`'s settings replaced by `config`."""
        return replace(self, engine_settings={**self.engine_settings, name: config})

    @property
    def local(self) -> IsolationConfig:
        """Return `executors.local`: the local engine's job sandbox and limits."""
        return cast(IsolationConfig, self.engine_config("local"))

    @property
    def slurm(self) -> SlurmSettings:
        """Return `executors.slurm`: series → partitions, batch scripts."""
        return cast(SlurmSettings, self.engine_config("slurm"))

    @property
    def ray(self) -> RaySettings:
        """Return `executors.ray`: series → Ray resources, runtimes."""
        return cast(RaySettings, self.engine_config("ray"))

    def series_kind(self, series: str) -> str:
        """Return `cpu` for a series of `runtimes.cpu_series` (no GPUs), else `gpu`."""
        from ..engines.runtimes import series_kind

        return series_kind(series, self.runtimes)

    def runtime_blocker(self, recipe: Any, version: str, series: str) -> Blocker | None:
        """Return why this console cannot start `recipe` at `version` on `series` (its runtimes, its framework
        checkouts, its own interpreter), or None when it can."""
        from ..engines.runtimes import blocker, console_environment

        return blocker(recipe, version, series, settings=self.runtimes, framework_dirs=self.framework_dirs,
                       env=console_environment())

    def engines(self) -> tuple[str, ...]:
        """Return the engines this console drives: the default one and every one `executors.series` names."""
        return tuple(sorted({self.executor, *self.engine_series.values()}))

    def engines_of(self, series: Iterable[str]) -> dict[str, list[str]]:
        """Return the engines a job of these series would need, each with its series (more than one: refused)."""
        out: dict[str, list[str]] = {}
        for name in series:
            out.setdefault(self.engine_of(name), []).append(name)
        return out

    def series(self) -> dict[str, str]:
        """Return the known accelerator series with their display labels, from the profile registry."""
        out: dict[str, str] = {}
        for profile in self.profiles:
            series = profile.series or profile.name
            out.setdefault(series, series.upper())
        return out


def _profiles_from(raw: Any) -> tuple[tuple[ProfileEntry, ...], dict[str, float]]:
    if not isinstance(raw, list) or not raw:
        raise SettingsError("profiles: must be a non-empty list of {name, series, num_nodes, gpus_per_node, label}")
    out = []
    hours: dict[str, float] = {}
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise SettingsError(f"profiles[{i}]: needs a name")
        out.append(ProfileEntry.from_dict(item))
        if "max_hours" in item:
            value = item["max_hours"]
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e6:
                raise SettingsError(f"profiles[{i}].max_hours: must be a number of hours ≥ 0 (0 = no limit)")
            hours[item["name"]] = float(value)
    return tuple(out), hours


def _model_roots(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(v, str) and v.startswith("/") and "\x00" not in v for v in raw):
        raise SettingsError("model_roots: must be a list of absolute folder paths, e.g. [/srv/models]")
    return tuple(os.path.normpath(v) for v in raw)


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Return settings from defaults, then the YAML `config_file`, then non-None keyword `overrides`."""
    values: dict[str, Any] = {}
    if config_file is not None:
        import yaml

        from starforge.safeyaml import load_yaml_bounded

        try:
            text = Path(config_file).read_text(encoding="utf-8")
            raw = load_yaml_bounded(text, max_bytes=1024 * 1024, what=str(config_file)) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise SettingsError(f"cannot read config file {config_file}: {exc}") from exc
        if not isinstance(raw, dict):
            raise SettingsError(f"config file {config_file} must hold a mapping")
        values.update(_from_mapping(raw))
        values["config_file"] = str(Path(config_file).resolve())
    values.update({k: v for k, v in overrides.items() if v is not None})
    if "state_dir" not in values:
        raise SettingsError("a state directory is required (--state-dir)")
    values["state_dir"] = Path(values["state_dir"]).expanduser().resolve()
    known = {f.name for f in fields(Settings)}
    unknown = set(values) - known
    if unknown:
        raise SettingsError(f"unknown settings: {', '.join(sorted(unknown))}")
    settings = Settings(**values)
    if "profiles" not in values and settings.engine_of("cpu") != "local":
        settings = replace(settings, profiles=_default_profiles(settings.engine_of("cpu")))
    _check_caches(settings)
    _check_engines(settings)
    return settings


def _check_engines(settings: Settings) -> None:
    """Refuse an unknown default engine (`executor`, `sf console up --executor`) and an unknown
    `admission.unplaceable`."""
    known = registry.names()
    if settings.executor not in known:
        raise SettingsError(f"executor: unknown engine {settings.executor!r} (known: {', '.join(known)})")
    if settings.unplaceable not in UNPLACEABLE:
        raise SettingsError(f"admission.unplaceable: must be {' or '.join(UNPLACEABLE)}, not {settings.unplaceable!r}")


def _check_caches(settings: Settings) -> None:
    """Refuse caches that nest in the state folder or in each other (links resolved).

    Jobs are shown the hub cache read-write (one folder per account) and the runtime cache read-only: a runtime cache
    inside the hub cache would let an account named like its folder write every runtime, and either inside the state
    folder would show jobs the console's state.
    """
    state = settings.state_dir.resolve()
    runtimes = settings.runtimes.cache_dir.resolve()
    hub = settings.runtimes.hub_cache.resolve()
    for key, path in (("cache_dir", runtimes), ("hub_cache", hub)):
        if path == state or path.is_relative_to(state) or state.is_relative_to(path):
            raise SettingsError(f"runtimes.{key}: {path} must lie outside the state directory {state} (jobs are "
                                "shown the caches, and must never see the state directory)")
    if hub == runtimes or hub.is_relative_to(runtimes) or runtimes.is_relative_to(hub):
        raise SettingsError(f"runtimes.hub_cache ({hub}) and runtimes.cache_dir ({runtimes}) must not nest: jobs write "
                            "their account's hub cache and must never write a runtime")
    images = settings.images.cache_dir.resolve()
    for name, path in (("the state directory", state), ("runtimes.hub_cache", hub)):
        if images == path or images.is_relative_to(path) or path.is_relative_to(images):
            raise SettingsError(f"images.cache_dir: {images} must not nest with {name} {path} (jobs are shown images "
                                "read-only, and must never write one nor see the state directory)")


def _trusted_proxies(raw: Any) -> tuple[str, ...]:
    """Read `trusted_proxies`: a list of IP addresses or networks (`10.0.0.0/8`)."""
    import ipaddress

    if not isinstance(raw, list):
        raise SettingsError("trusted_proxies: must be a list of IP addresses or networks, e.g. [127.0.0.1, 10.0.0.0/8]")
    out = []
    for i, item in enumerate(raw):
        try:
            out.append(str(ipaddress.ip_network(str(item), strict=False)))
        except ValueError as exc:
            raise SettingsError(f"trusted_proxies[{i}]: {item!r} is not an IP address or network ({exc})") from exc
    return tuple(out)


def _admission(raw: Any) -> dict[str, Any]:
    """Read `admission: {unplaceable: refuse | queue}`."""
    if not isinstance(raw, dict) or set(raw) - {"unplaceable"}:
        raise SettingsError("admission: must be a mapping {unplaceable: refuse | queue}")
    return {"unplaceable": raw["unplaceable"]} if "unplaceable" in raw else {}


def _engine_series(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
        raise SettingsError("executors.series: must map series names to engines, e.g. {h200: slurm, cpu: local}")
    known = registry.names()
    for series, engine in raw.items():
        if engine not in known:
            raise SettingsError(f"executors.series.{series}: unknown engine {engine!r} (known: {', '.join(known)})")
    return {str(k): str(v) for k, v in raw.items()}


def _executors(raw: dict[str, Any]) -> dict[str, Any]:
    """Read `executors:`: `series` (series → engine), then each registered engine's block with its own reader."""
    known = registry.names()
    unknown = set(raw) - {*known, "series"}
    if unknown:
        raise SettingsError(f"executors: unknown engines {', '.join(sorted(map(str, unknown)))} "
                            f"(known: {', '.join(known)}; and `series`, which maps series to engines)")
    out: dict[str, Any] = {}
    if "series" in raw:
        out["engine_series"] = _engine_series(raw["series"])
    read: dict[str, Any] = {}
    for engine in registry.engines():
        if engine.name in raw:
            try:
                read[engine.name] = engine.read(raw[engine.name])
            except ValueError as exc:
                raise SettingsError(str(exc)) from exc
    if read:
        out["engine_settings"] = {**registry.default_settings(), **read}
    return out


def _executors_block(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SettingsError("executors: must be a mapping, e.g. {local: {sandbox: on}}")
    return _executors(value)


def _port(value: Any) -> dict[str, Any]:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise SettingsError("port: must be a TCP port number (1-65535)")
    return {"port": value}


def _catalog(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SettingsError("catalog: must be a mapping {path, digest_scheme, core_version, core_requirement}")
    disabled = tuple(value.pop("disabled", ()) or ())
    return {"catalog": replace(CatalogSettings(), disabled=disabled, **value)}


def _quota(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SettingsError("quota: must be a mapping")
    allowed = tuple(value.pop("allowed_profiles", ()) or ())
    return {"quota": replace(QuotaDefaults(), allowed_profiles=allowed, **value)}


def _capacity(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(v, int) and v >= 0 for v in value.values()):
        raise SettingsError("capacity: must map series names to slot counts (integers ≥ 0)")
    return {"capacity": {str(k): int(v) for k, v in value.items()}}


def _kuberay(value: Any) -> dict[str, Any]:
    try:
        return {"kuberay": kuberay_config_from(value)}
    except ValueError as exc:
        raise SettingsError(str(exc)) from exc


def _images(value: Any) -> dict[str, Any]:
    try:
        return {"images": image_settings_from(value, _default_images())}
    except ValueError as exc:
        raise SettingsError(str(exc)) from exc


def _runtimes(value: Any) -> dict[str, Any]:
    try:
        return {"runtimes": runtime_settings_from(value, _default_runtimes())}
    except ValueError as exc:
        raise SettingsError(str(exc)) from exc


def _scheduling(key: str, reader: Callable[[Any], Any]) -> Callable[[Any], dict[str, Any]]:
    def read(value: Any) -> dict[str, Any]:
        try:
            return {key: reader(value)}
        except ValueError as exc:
            raise SettingsError(str(exc)) from exc
    return read


def _profiles(value: Any) -> dict[str, Any]:
    profiles, hours = _profiles_from(value)
    return {"profiles": profiles, "profile_max_hours": hours}


# the configuration keys read by a reader of their own (every other key is taken as it is): key → reader of its
# value, returning the settings fields it sets
_READERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "profiles": _profiles,
    "executors": _executors_block,
    "port": _port,
    "catalog": _catalog,
    "quota": _quota,
    "capacity": _capacity,
    "kuberay": _kuberay,
    "model_roots": lambda value: {"model_roots": _model_roots(value)},
    "admission": _admission,
    "fair_share": _scheduling("fair_share", read_fair_share),
    "preemption": _scheduling("preemption", read_preemption),
    "restarts": _scheduling("restarts", read_restarts),
    "serving": _scheduling("serving", read_serving),
    "notify": _scheduling("notify", read_notify),
    "mlflow": _scheduling("mlflow", read_mlflow_mirror),
    "runtimes": _runtimes,
    "images": _images,
    "trusted_proxies": lambda value: {"trusted_proxies": _trusted_proxies(value)},
    "image_allowlist": lambda value: {"image_allowlist": None if value is None else tuple(str(v) for v in value)},
}


def _from_mapping(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in raw.items():
        reader = _READERS.get(key)
        out.update(reader(value) if reader is not None else {key: value})
    return out

"""The typed HTTP client of a StarForge console: the SDK behind `sf`, for tool writers too.

    from starforge.client import Console
    with Console.from_home() as console:          # the server and token of `sf login`
        print(console.whoami().username)
"""

from ._auth import login_with_token, logout, refresh
from ._config import Credentials, ForgeHome, Timeouts, normalise_server
from ._console import Console
from ._device import device_param, poll_device_login, start_device_login
from ._errors import (
    AmbiguousJob,
    AuthError,
    ConfigError,
    ConsoleError,
    Forbidden,
    Maintenance,
    NotFound,
    NotLoggedIn,
    Rejected,
    Unavailable,
)
from ._jobs import SUCCEEDED, TERMINAL, Job
from ._meta import bare_profile, build_meta, encode_meta
from ._models import (
    AdmissionVerdict,
    ClusterStatus,
    ControlResult,
    DeviceCode,
    MetricPoint,
    Metrics,
    ServerVersion,
    StopResult,
    SubmitResult,
    Usage,
    User,
)
from ._notify import Notify, verify_webhook
from ._serving import READY, SERVICE_TERMINAL, Serving, chat_deltas, proxy_url
from ._sse import LogEvent, SSEParser

__all__ = [
    "READY",
    "SERVICE_TERMINAL",
    "SUCCEEDED",
    "TERMINAL",
    "AdmissionVerdict",
    "AmbiguousJob",
    "AuthError",
    "ClusterStatus",
    "ConfigError",
    "Console",
    "ConsoleError",
    "ControlResult",
    "Credentials",
    "DeviceCode",
    "Forbidden",
    "ForgeHome",
    "Job",
    "LogEvent",
    "Maintenance",
    "MetricPoint",
    "Metrics",
    "NotFound",
    "NotLoggedIn",
    "Notify",
    "Rejected",
    "SSEParser",
    "ServerVersion",
    "Serving",
    "StopResult",
    "SubmitResult",
    "Timeouts",
    "Unavailable",
    "Usage",
    "User",
    "bare_profile",
    "build_meta",
    "chat_deltas",
    "device_param",
    "encode_meta",
    "login_with_token",
    "logout",
    "normalise_server",
    "poll_device_login",
    "proxy_url",
    "refresh",
    "start_device_login",
    "verify_webhook",
]

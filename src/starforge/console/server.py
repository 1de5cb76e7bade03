"""Run the console with uvicorn on loopback by default, with header limits large enough for X-Forge-Meta.

Start order matters: the database and catalog are checked, then the job sandbox (the console refuses to start
when jobs cannot be isolated), then the engines are reached and the console is built whole (`build_console`),
then the port is bound, and only then is the one-time admin token created and printed — a console that cannot
serve never swallows the token.

With `workers` above one the parent binds the port once, then forks that many worker processes which inherit the
listening socket, build the console each (engines, runtime, application) and say they are ready before the token
is printed; the parent supervises them (`workers.Supervisor`): a worker that dies is started again, SIGTERM stops
them all. Each worker serves the API; the one elected leader (`services.leadership`) runs the scheduler.
"""

from __future__ import annotations

import gc
import os
import socket
import sys
from typing import Any

from ..engines.isolation import Isolation
from . import worker_folder
from .api.hot_paths import HotPaths
from .app import Opened, bootstrap_admin, build_console, create_app, open_state
from .background import build_engines, prepare_isolation
from .banner import sandbox_banner
from .http_protocol import http_protocol
from .job_channel import JobChannelGuard, bind_channel
from .runtime import console_identity
from .settings import Settings

__all__ = ["PortUnavailable", "bind", "default_workers", "serve"]

MAX_HEADER_BYTES = 1024 * 1024  # X-Forge-Meta is 1–3 KB usually; the protocol asks for at least 64 KB
MAX_WORKERS = 8  # the default's cap: beyond it the one SQLite writer, not the API, is what waits


def default_workers() -> int:
    """Return the worker processes `sf console up` starts by default: this machine's cores, capped at MAX_WORKERS."""
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))


class PortUnavailable(OSError):
    """Raised when the console cannot listen on its address (in use, not permitted, unknown host)."""


def bind(host: str, port: int) -> socket.socket:
    """Return a listening socket on `host:port`, or raise PortUnavailable saying why."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise PortUnavailable(f"cannot listen on {host}:{port}: {exc}") from exc
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise PortUnavailable(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(False)
    return sock


def serve(settings: Settings, *, workers: int = 1) -> None:
    """Start the console in the foreground, in `workers` processes; print the one-time admin token on a fresh state
    directory."""
    opened = open_state(settings)
    if "local" in settings.engines():
        isolation = prepare_isolation(settings)
    else:  # every series runs on a cluster engine: nothing runs on this machine
        isolation = Isolation.none(settings.state_dir)
    if "local" in settings.engines() and not isolation.sandboxed:
        bar = "!" * 100
        print(f"{bar}\n{isolation.warning()}\n{bar}", file=sys.stderr, flush=True)
    if workers > 1:
        _serve_workers(settings, opened, isolation, workers)
        return
    # build_engines raises ExecutorError when an engine cannot be reached
    engines = build_engines(settings, isolation) if settings.run_background else None
    console = build_console(settings, opened=opened, isolation=isolation, engines=engines)
    sockets = _listen(settings, isolation)
    _announce(settings, opened, isolation, workers=1)
    _run(settings, create_app(settings, console), sockets)


def _serve_workers(settings: Settings, opened: Opened, isolation: Isolation, workers: int) -> None:
    """Bind once, fork `workers` processes serving on the inherited sockets, announce once they are all ready, and
    supervise them until SIGTERM."""
    from .workers import Supervisor

    sockets = _listen(settings, isolation)
    console_identity(settings.state_dir)  # written once here: the workers read the same
    shared = worker_folder.prepare(settings)  # made afresh before any worker opens it
    opened.db.dispose()  # no pooled connection crosses a fork: each worker opens its own

    def worker() -> None:
        # build_engines raises ExecutorError when an engine cannot be reached: the supervisor reports it
        engines = build_engines(settings, isolation) if settings.run_background else None
        # the per-address limits and the measurements are the console's, whichever worker answers
        console = build_console(settings, opened=opened, isolation=isolation, engines=engines, shared=shared)
        app = create_app(settings, console)
        supervisor.ready()
        _run(settings, app, sockets)

    supervisor = Supervisor(worker, workers)
    supervisor.start()  # raises the first worker's start-up error (the others are stopped)
    _announce(settings, opened, isolation, workers=workers)
    opened.db.dispose()
    supervisor.supervise()


def _listen(settings: Settings, isolation: Isolation) -> list[socket.socket]:
    sockets = [bind(settings.host, settings.port)]
    if isolation.network is not None:  # jobs in their own network reach the console only through its channel
        sockets.append(bind_channel(settings.state_dir))
    return sockets


def _announce(settings: Settings, opened: Opened, isolation: Isolation, *, workers: int) -> None:
    token = bootstrap_admin(opened)
    if token:
        print(f"admin token (shown once): {token}", flush=True)
        print(f"  log in with: sf login --server {settings.base_url} --token {token}", file=sys.stderr, flush=True)
    if not settings.image_allowlist:
        print("note: no image_allowlist is configured, so every --image override is refused; allow a registry "
              "with `image_allowlist` in the --config file or `--allow-registry HOST`", file=sys.stderr, flush=True)
    processes = f"; {workers} worker processes" if workers > 1 else ""
    print(f"StarForge console listening on http://{settings.host}:{settings.port} "
          f"(state {settings.state_dir}, {'SQLite' if opened.db.is_sqlite else 'PostgreSQL'}; "
          f"engines {', '.join(settings.engines())}; {sandbox_banner(settings, isolation)}{processes})",
          file=sys.stderr, flush=True)


def _run(settings: Settings, app: Any, sockets: list[socket.socket]) -> None:
    import uvicorn

    config = uvicorn.Config(
        # the channel's guard first (a job's Unix-socket connection reaches the ingest only), then the hot routes, which
        # skip the application's middleware stack too
        JobChannelGuard(HotPaths(app, application=app)),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,
        http=http_protocol(MAX_HEADER_BYTES),  # httptools with bounded headers (h11 when it is not installed)
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        # the standard event loop: uvloop was no faster here and, at 256 clients, left some connections unanswered for
        # seconds (p99 5 s against 0.2 s; docs/performance.md)
        loop="asyncio",
        timeout_keep_alive=5,
        lifespan="on",
        # X-Forwarded-For/-Proto only from configured proxies: a client's address (what per-client limits count by)
        # and the scheme are the connection's own, never a header any local process could send (uvicorn's default
        # trusts loopback)
        proxy_headers=bool(settings.trusted_proxies),
        forwarded_allow_ips=list(settings.trusted_proxies) or None,
    )
    gc.freeze()  # what start-up built lives as long as the process: keep the collector from re-scanning it under load
    gc.enable()  # `sf console up` turns it off while the console loads
    uvicorn.Server(config).run(sockets=sockets)

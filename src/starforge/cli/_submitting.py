"""The console's steps `sf submit` and `sf sweep` share around `lab.build_submission`: a console session, the
profile registry, the extension sync, the client handshake, printing a refusal (each step prints its own and exits
1), and what their shared options add to the submission meta."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from starforge.cli._output import EXIT_REFUSED, Output

if TYPE_CHECKING:
    import httpx

    from starforge.client import Console
    from starforge.contract import Problem, ProfileEntry
    from starforge.lab import BuiltSpec, Submission

__all__ = ["handshake", "refuse", "refuse_unbuilt", "registry_of", "restarts_meta", "session", "sync_extensions",
           "warn_all"]

_PROGRESS_MIN_BYTES = 1 << 20
_CHUNK = 64 << 10


def restarts_meta(max_restarts: int | None) -> dict[str, Any]:
    """Return what `--max-restarts N` adds to the submission meta: `max_restarts` (nothing when the option is not
    given, so the submission keeps the official client's 0; the console refuses N beyond its cap at the option)."""
    return {} if max_restarts is None else {"max_restarts": max_restarts}


# ---- refusals and warnings ------------------------------------------------------------------------------------

def refuse(out: Output, title: str, problems: Sequence[Problem], warnings: Sequence[Problem] = (),
           **extra: Any) -> NoReturn:
    """Print a refusal (title, one bullet per problem with its hint) and exit 1; `--json` prints one object."""
    if out.as_json:
        out.refusal_json(title, problems, warnings, **extra)
    else:
        out.problems(title, problems, warnings)
    raise typer.Exit(EXIT_REFUSED)


def warn_all(out: Output, warnings: Sequence[Problem]) -> None:
    """Print each warning as `warning: <field>: <message>`."""
    for warning in warnings:
        out.warn(f"{warning.field}: {warning.message}")


# ---- the console side -----------------------------------------------------------------------------------------

def _progress_transport(out: Output) -> httpx.BaseTransport | None:
    """Return a transport that shows an upload bar for bundles over 1 MB, on a terminal only (Rich, lazily)."""
    if out.as_json or not sys.stderr.isatty():
        return None
    import httpx

    class _Counted(httpx.SyncByteStream):
        def __init__(self, data: bytes) -> None:
            self._data = data

        def __iter__(self) -> Iterator[bytes]:
            from rich.console import Console as RichConsole
            from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

            view = memoryview(self._data)
            with Progress("uploading", BarColumn(), DownloadColumn(), TransferSpeedColumn(), transient=True,
                          console=RichConsole(stderr=True)) as bar:
                task = bar.add_task("upload", total=len(view))
                for start in range(0, len(view), _CHUNK):
                    chunk = bytes(view[start:start + _CHUNK])
                    yield chunk
                    bar.advance(task, len(chunk))

    class _ProgressTransport(httpx.BaseTransport):
        def __init__(self) -> None:
            self._inner = httpx.HTTPTransport()

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if request.method == "POST" and request.url.path.endswith("/api/jobs"):
                body = request.content
                if len(body) > _PROGRESS_MIN_BYTES:
                    request.stream = _Counted(body)
            return self._inner.handle_request(request)

        def close(self) -> None:
            self._inner.close()

    return _ProgressTransport()


@contextmanager
def session(out: Output) -> Iterator[Console]:
    """Yield a client of the configured console; a `ConsoleError` is rendered by `Output.fail` (exit 1)."""
    from starforge.client import Console, ConsoleError

    try:
        with Console.from_home(transport=_progress_transport(out)) as console:
            yield console
    except ConsoleError as exc:
        out.fail(exc)


def registry_of(console: Console) -> list[ProfileEntry]:
    from starforge.client import ForgeHome
    from starforge.lab import save_registry

    profiles = list(console.cluster_status().profiles)
    save_registry(ForgeHome.from_env().path, console.server, profiles)
    return profiles


def sync_extensions(out: Output, console: Console) -> None:
    """`GET /api/extensions?source=user` (wire §6.1): a failure is reported and the submission continues."""
    from starforge.client import ConsoleError

    try:
        console.extensions()
    except ConsoleError as exc:
        out.warn(f"declaration packs were not synced: {exc.title or exc.detail}")


def handshake(out: Output, console: Console, built: BuiltSpec, exp_label: str) -> None:
    from starforge.lab import check_handshake

    assert built.job is not None
    report = check_handshake(console.recipes(), built.job, exp_label=exp_label,
                             local_versions=built.recipe.framework_versions if built.recipe else ())
    if report.ok:
        return
    title = "The console's catalog does not match this client; nothing was uploaded"
    rows = [{"what": w, "console": c, "spec": s} for w, c, s in report.rows]
    if out.as_json:
        refuse(out, title, report.problems, differences=rows)
    out.problems(title, report.problems)
    if report.rows:
        table = out.table(report.rows, ["what", "console's catalog", "this spec"])
        out.info("\n".join("    " + line for line in table.splitlines()))
    raise typer.Exit(EXIT_REFUSED)


def refuse_unbuilt(out: Output, sub: Submission) -> None:
    """Refuse (exit 1) a submission whose JobSpec, or one of whose sweep points' specs, was not built."""
    if sub.stage == "spec":
        refuse(out, "The JobSpec was not built; nothing was uploaded", sub.problems, sub.warnings)
    if sub.stage == "sweep":
        refuse(out, "The sweep was not built; nothing was uploaded", sub.problems)

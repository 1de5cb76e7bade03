"""A console session for registry and administration commands: refusals print every problem with its hint, and a
403 says what the account lacks; everything else is `console_session`'s `error: …` (exit 1)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer

from starforge.cli._output import EXIT_REFUSED, Output
from starforge.cli.cmd_job import console_session

if TYPE_CHECKING:
    from starforge.client import Console

__all__ = ["api_session"]


@contextmanager
def api_session(out: Output, *, forbidden_hint: str = "") -> Iterator[Console]:
    """Yield a client of the configured console; a refusal with problems prints them and exits 1, a 403 exits 1 with
    `forbidden_hint` as its next step."""
    from starforge.client import Forbidden, Rejected

    with console_session(out) as console:
        try:
            yield console
        except Rejected as exc:
            if not exc.problems or exc.status == 409:  # a conflict is one sentence ("… already exists"), no fields
                raise
            if out.as_json:
                out.emit({"ok": False, "title": exc.title, "problems": [p.to_dict() for p in exc.problems]})
            else:
                out.problems(exc.title or "The console refused the request", exc.problems)
            raise typer.Exit(EXIT_REFUSED) from None
        except Forbidden as exc:
            out.abort(exc.detail, hint=forbidden_hint or exc.hint)

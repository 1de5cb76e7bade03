"""A console session for registry and administration commands: a refusal prints every problem with its hint
(`Output.fail`), and a 403 says what the account lacks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from starforge.cli._output import Output
from starforge.cli.cmd_job import console_session

if TYPE_CHECKING:
    from starforge.client import Console

__all__ = ["api_session"]


@contextmanager
def api_session(out: Output, *, forbidden_hint: str = "") -> Iterator[Console]:
    """Yield a client of the configured console; a refusal prints its problems and exits 1, a 403 exits 1 with
    `forbidden_hint` as its next step."""
    from starforge.client import Forbidden

    with console_session(out) as console:
        try:
            yield console
        except Forbidden as exc:
            out.fail(exc, hint=forbidden_hint)

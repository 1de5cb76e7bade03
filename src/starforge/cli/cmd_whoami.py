"""`sf whoami`: show the account the stored credentials belong to, as the console sees it."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from starforge.cli._output import Output

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Show the account you are logged in as.",
)


def _human(data: dict[str, Any]) -> str:
    user = data["user"]
    extra = ", ".join(v for v in (user.get("role"), user.get("email")) if v)
    return f"{user.get('username') or '?'}" + (f" ({extra})" if extra else "") + f" on {data['server']}"


@app.command()
def whoami(
    as_json: Annotated[bool, typer.Option("--json", help="print {server, user} as JSON")] = False,
) -> None:
    """Ask the console who the stored token belongs to (exit 0, or 1 when not logged in or refused)."""
    from starforge.client import Console, ConsoleError

    out = Output(as_json=as_json)
    try:
        with Console.from_home() as console:
            user = console.whoami()
    except ConsoleError as exc:
        out.fail(exc)
    out.emit({"server": console.server, "user": dict(user.raw) or {"username": user.username}}, _human)

"""`sf logout`: revoke the stored refresh token and forget the credentials of the current console."""

from __future__ import annotations

from typing import Annotated

import typer

from starforge.cli._output import Output

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Forget the credentials of the current console.",
)


@app.command()
def logout(
    server: Annotated[str | None, typer.Option("--server", help="console URL (default: the configured one)")] = None,
) -> None:
    """Log out: the console revokes the session (errors ignored) and the local entry is deleted (exit 0)."""
    from starforge.client import ConsoleError, ForgeHome
    from starforge.client import logout as client_logout

    out = Output()
    home = ForgeHome.from_env()
    try:
        url = home.resolve_server(server)
        removed = client_logout(url, home=home)
    except ConsoleError as exc:
        out.fail(exc)
    if removed is None:
        out.info(f"Not logged in to {url}; nothing to do.")
    else:
        out.success(f"Logged out of {url}" + (f" ({removed.username})" if removed.username else ""))

"""`sf login`: log in to a console with an API token or the device flow; `sf login approve CODE` approves a code."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from starforge.cli._output import Output

if TYPE_CHECKING:
    from starforge.client import ConsoleError, DeviceCode

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    invoke_without_command=True,
    no_args_is_help=False,
    help="Log in to a console (token or device flow); approve a device code.",
)


def _fail(out: Output, exc: ConsoleError) -> NoReturn:
    out.fail(exc)


def _may_open_browser(no_browser: bool) -> bool:
    if no_browser or os.environ.get("SSH_CONNECTION") or os.environ.get("SSH_TTY") or not sys.stdin.isatty():
        return False
    return not (sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")))


def _show_code(out: Output, code: DeviceCode, open_browser: bool) -> None:
    out.info(f"Open {code.verification_uri}")
    out.info(f"and confirm the code: {code.user_code}")
    if open_browser:
        import webbrowser

        webbrowser.open(code.verification_uri)
    out.info(f"Waiting for approval (the code expires in {int(code.expires_in) // 60} min; Ctrl-C to give up)…")


@app.callback()
def login(
    ctx: typer.Context,
    server: Annotated[str | None, typer.Option("--server", help="console URL (saved as the default console)")] = None,
    token: Annotated[str | None, typer.Option("--token", help="log in with an API token (CI, scripts)")] = None,
    device_flow: Annotated[bool, typer.Option("--device-flow", help="log in with a code confirmed in a browser")] = False,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="device flow without opening a browser")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the logged-in user as JSON")] = False,
) -> None:
    """Log in and store the credentials for this console (exit 0 logged in, 1 refused)."""
    if ctx.invoked_subcommand is not None:
        return
    from starforge.client import (
        ConsoleError,
        ForgeHome,
        login_with_token,
        poll_device_login,
        start_device_login,
    )

    out = Output(as_json=as_json)
    home = ForgeHome.from_env()
    try:
        url = home.resolve_server(server)
        home.save_server(url)
        if token is not None:
            credentials = login_with_token(url, token)
        else:
            code = start_device_login(url)
            _show_code(out, code, _may_open_browser(no_browser))
            try:
                credentials = poll_device_login(url, code)
            except KeyboardInterrupt:
                out.abort("login cancelled", code=130)
        home.save_credentials(url, credentials)
    except ConsoleError as exc:
        _fail(out, exc)
    out.emit({"server": url, "user": credentials.user}, lambda _: None)
    out.success(f"Logged in to {url} as {credentials.username or '(unknown user)'}")


@app.command("approve")
def approve(
    user_code: Annotated[str, typer.Argument(help="the code shown by `sf login` on the other machine")],
    as_json: Annotated[bool, typer.Option("--json", help="print the console's answer as JSON")] = False,
) -> None:
    """Approve a pending device login with your account: that session logs in as you (exit 0 approved, 1 refused)."""
    from starforge.client import Console, ConsoleError

    out = Output(as_json=as_json)
    try:
        with Console.from_home() as console:
            answer = console.approve_device_code(user_code)
    except ConsoleError as exc:
        _fail(out, exc)
    out.emit(answer, lambda _: None)
    out.success(f"Approved the login code {user_code.strip()}")

"""The browser page of the device login (`/cli/device`): HTML rendering only; approving is `device_logins`."""

from __future__ import annotations

import html

from fastapi.responses import HTMLResponse

from ..services.device_logins import PageApproval

__all__ = ["render_device_page"]

_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>StarForge · approve a login</title>
<style>body{{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}}
input{{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box;margin:.3rem 0 1rem}}
button{{font-size:1rem;padding:.5rem 1.2rem}} .msg{{padding:.6rem;border-radius:.3rem;background:#eef}}</style>
</head><body><h1>Approve a StarForge login</h1>{message}
<form method="post" action="/cli/device"><label>Code shown by <code>sf login</code>
<input name="user_code" value="{code}" autocomplete="off"></label>
<label>Your API token (from <code>sf console token create</code> or an existing login)
<input name="token" type="password" autocomplete="off"></label>
<button type="submit">Approve</button></form>
<p>Or, from a terminal where you are logged in: <code>sf login approve {code_text}</code></p></body></html>"""


def render_device_page(code: str, approval: PageApproval | None = None) -> HTMLResponse:
    """Return the approval page for `code` (its first 16 characters, escaped), with the outcome of an approval."""
    safe = html.escape(code[:16])
    if approval is None:
        message, status = "", 200
    elif approval.error:
        message, status = f'<p class="msg">Not approved: {html.escape(approval.error)}</p>', approval.status
    else:
        message = (f'<p class="msg">Approved for <b>{html.escape(approval.username)}</b>: '
                   "return to your terminal.</p>")
        status = approval.status
    return HTMLResponse(_PAGE.format(message=message, code=safe, code_text=safe or "CODE"), status_code=status)

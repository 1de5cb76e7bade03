"""`sf volume`: list the volumes you may mount (administrators register them over the API)."""

from __future__ import annotations

from starforge.cli import _assets

app = _assets.new_app("List the volumes you can mount (ls); reference them in a spec's data.volumes.")


@app.callback()
def volume() -> None:
    """List the volumes you can mount (ls); reference them in a spec's data.volumes."""


_assets.add_ls(app, "volumes", lambda console: console.volumes(),
               "List the volumes you may mount: your own, public ones, and those shared with you.",
               ["volume", "versions", "visibility", "description"],
               lambda r: [r.get("id", ""), _assets.versions(r), r.get("visibility", ""), r.get("description", "")],
               empty="No volumes you may mount yet.",
               hint="administrators register volumes (`POST /api/admin/data` with kind volume); ask yours to "
                    "register one or to grant you access")

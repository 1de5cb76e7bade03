"""`sf corpus`: push a folder as an immutable corpus version, and list the corpora you may read (`--corpus`)."""

from __future__ import annotations

from starforge.cli import _assets

app = _assets.new_app("Push and list reference corpora (push, ls); submit with --corpus <owner>/<name>@<version>.")
_assets.add_push(app, "corpus", "Upload PATH (a folder of documents) as a new corpus version; print its reference "
                                "(`<owner>/<name>@<version>`) for --corpus.")
_assets.add_ls(app, "corpora", lambda console: console.corpora(),
               "List the corpora you may read: your own, public ones, and those shared with you.",
               ["corpus", "latest", "versions", "visibility"],
               lambda r: [r.get("id", ""), r.get("latest", ""), _assets.versions(r), r.get("visibility", "")],
               empty="No corpora you may read yet.", hint="push one with `sf corpus push DIR NAME@VERSION`")

"""`sf dataset`: push a file or folder as an immutable dataset version, and list the datasets you may read."""

from __future__ import annotations

from starforge.cli import _assets
from starforge.cli._output import human_size

app = _assets.new_app("Push and list datasets (push, ls).")
_assets.add_push(app, "dataset", "Upload PATH as a new dataset version; print its reference "
                                 "(`<owner>/<name>@<version>`) for --train-dataset.")
_assets.add_ls(app, "datasets", lambda console: console.datasets(),
               "List the datasets you may read: your own, public ones, and those shared with you.",
               ["dataset", "latest", "versions", "files", "size", "visibility"],
               lambda r: [r.get("id", ""), r.get("latest", ""), _assets.versions(r), r.get("files", "-"),
                          human_size(r.get("total_bytes")), r.get("visibility", "")],
               empty="No datasets you may read yet.", hint="push one with `sf dataset push PATH NAME@VERSION`")

"""`sf model`: push a model folder as an immutable version, and list the models you may use (`--model`)."""

from __future__ import annotations

from starforge.cli import _assets

app = _assets.new_app("Push and list models (push, ls); submit with --model <owner>/<name>@<version>.")
_assets.add_push(app, "model", "Upload PATH (a model folder) as a new model version; print its reference "
                               "(`<owner>/<name>@<version>`) for --model.")
_assets.add_ls(app, "models", lambda console: console.models(),
               "List the models you may use: your own, public ones, and those shared with you.",
               ["model", "latest", "versions", "visibility", "description"],
               lambda r: [r.get("id", ""), r.get("latest", ""), _assets.versions(r, "version_names"),
                          r.get("visibility", ""), r.get("description", "")],
               empty="No models you may use yet.", hint="push one with `sf model push DIR NAME@VERSION`")

"""One shared implementation: what `sf spec check` accepts, the console never refuses for a contract or catalog
reason, and what it refuses, the console refuses at the same fields (every conformance case, official catalog)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import load_cases
from tests.integration.conftest import ConsoleProcess, make_console, unique

SF = str(Path(sys.executable).with_name("sf"))
POLICY_CODES = {
    "image_not_allowed", "artifact_unknown", "corpus_unknown", "reference_unknown", "plugin_unknown",
    "plugin_digest_mismatch", "profile_unknown", "profile_not_allowed", "series_unknown", "quota_exceeded",
    "quota_exhausted", "bundle_unsafe", "bundle_too_large", "unsafe_path_component",
}


@pytest.fixture(scope="module")
def official(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.official import official_catalog

    tree = official_catalog("0.3.56")
    config = {
        "catalog": {"path": str(tree), "digest_scheme": "manifest", "core_version": "0.3.56",
                    "core_requirement": ">=0.3.56,<0.4"},
        "profiles": [{"name": "h200", "series": "h200", "num_nodes": 1, "gpus_per_node": 8},
                     {"name": "h100", "series": "h100", "num_nodes": 1, "gpus_per_node": 8}],
        "run_background": False,
    }
    proc = make_console(tmp_path_factory, "sqlite", config=config)
    proc.start()
    yield proc, tree
    proc.stop()


def _local(spec: dict[str, Any], tree: Path) -> dict[str, Any]:
    """`sf spec check - --json` in a process of its own (the command as researchers run it)."""
    result = subprocess.run([SF, "spec", "check", "-", "--catalog", str(tree), "--digest-scheme", "manifest",
                             "--json"], input=json.dumps(spec), capture_output=True, text=True)
    assert result.returncode in (0, 1), result.stderr
    return dict(json.loads(result.stdout))


def _local_in_process(spec: dict[str, Any], tree: Path, folder: Path) -> dict[str, Any]:
    """The same command through `sf`'s own dispatcher in this process: one interpreter instead of one per case."""
    from starforge.cli.main import main

    file = folder / "spec.json"
    file.write_text(json.dumps(spec), encoding="utf-8")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["spec", "check", str(file), "--catalog", str(tree), "--digest-scheme", "manifest", "--json"])
    assert code in (0, 1), printed.getvalue()
    return dict(json.loads(printed.getvalue()))


def test_local_and_console_verdicts_agree(official: tuple[ConsoleProcess, Path], tmp_path: Path) -> None:
    console, tree = official
    with console.client(console.token_for(unique("same"))) as api:
        for number, case in enumerate(load_cases()):
            local = _local_in_process(case["spec"], tree, tmp_path)
            if number == 0:  # the separate process answers exactly as the in-process dispatch does
                assert _local(case["spec"], tree) == local, case["name"]
            remote = api.post("/api/admission/check", json={"spec": case["spec"]}).json()
            static = [p for p in remote["problems"] if p["code"] not in POLICY_CODES]
            assert [(p["field"], p["code"]) for p in static] == [(p["field"], p["code"]) for p in local["errors"]], \
                case["name"]
            if local["ok"]:
                assert all(p["code"] in POLICY_CODES for p in remote["problems"]), case["name"]

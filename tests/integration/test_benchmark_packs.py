"""Benchmark packs published with the real `sf plugin publish` to a real console: a pack's suites are offered from
then on (the latest enabled version), a disabled pack's are not; a pack naming a hub dataset, reaching outside its
folder or taking a suite name another pack offers is refused at its field with a hint, and nothing is stored."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from starforge.benchmarks import BUILTIN_ROOT
from starforge.bundle import directory_digest
from starforge.console.services.registries import benchmark_packs
from tests.integration.conftest import ConsoleProcess, unique
from tests.integration.test_cli_account import sf, token_login


def _offered(console: ConsoleProcess) -> dict[str, benchmark_packs.Suite]:
    with console.database().read() as db:
        return {s.name: s for s in benchmark_packs.available_suites(db)}


def _pack(tmp_path: Path, name: str, prefix: str, version: str = "1.0.0") -> Path:
    """A copy of the builtin pack named `name`@`version` whose suites are `<prefix>-sums` and `<prefix>-pick`."""
    folder = tmp_path / f"{name}-{version}"
    shutil.copytree(BUILTIN_ROOT, folder)
    manifest = (folder / "plugin.yaml").read_text(encoding="utf-8")
    manifest = manifest.replace("name: basic\n", f"name: {name}\n").replace('version: "1.0.0"', f'version: "{version}"')
    manifest = manifest.replace("name: basic-arithmetic", f"name: {prefix}-sums")
    (folder / "plugin.yaml").write_text(manifest.replace("name: basic-choice", f"name: {prefix}-pick"), encoding="utf-8")
    return folder


@pytest.fixture
def home(console: ConsoleProcess, tmp_path: Path) -> tuple[Path, str]:
    user = unique("bp")
    token_login(console, tmp_path / "home", user)
    return tmp_path / "home", user


def test_a_published_pack_offers_its_suites_until_it_is_disabled(console: ConsoleProcess, tmp_path: Path,
                                                                 home: tuple[Path, str]) -> None:
    forge_home, user = home
    prefix = unique("q")
    folder = _pack(tmp_path, "quiz", prefix)
    published = sf("plugin", "publish", str(folder), "--json", home=forge_home)
    assert published.returncode == 0, published.stderr
    answer = json.loads(published.stdout)
    assert (answer["id"], answer["kind"], answer["digest"]) == (f"{user}/quiz", "benchmark", directory_digest(folder))
    offered = _offered(console)
    suite = offered[f"{prefix}-pick"]
    assert (suite.pack, suite.pack_version, suite.digest, suite.task, suite.builtin) == (
        f"{user}/quiz", "1.0.0", answer["digest"], "basic_choice", False)
    assert offered["basic-choice"].builtin and offered["basic-choice"].pack == "starforge/basic"

    newer = _pack(tmp_path, "quiz", prefix, "1.1.0")
    assert sf("plugin", "publish", str(newer), home=forge_home).returncode == 0
    assert _offered(console)[f"{prefix}-pick"].pack_version == "1.1.0"  # the latest version offers them

    assert sf("plugin", "disable", f"{user}/quiz", home=forge_home).returncode == 0
    assert f"{prefix}-pick" not in _offered(console)


@pytest.mark.parametrize(("change", "field", "says"), [
    (lambda f: (f / "basic_choice.yaml").write_text(
        (f / "basic_choice.yaml").read_text().replace("dataset_path: json", "dataset_path: cais/mmlu")),
     "basic_choice.yaml.dataset_path", "names a dataset of the hub"),
    (lambda f: (f / "basic_choice.yaml").write_text(
        (f / "basic_choice.yaml").read_text().replace("test: choice.jsonl", "test: ../../etc/hosts")),
     "basic_choice.yaml.dataset_kwargs.data_files", "leads outside the pack's folder"),
    (lambda f: (f / "plugin.yaml").write_text(re.sub(r"name: \S+-pick", "name: basic-choice",
                                                     (f / "plugin.yaml").read_text())),
     "plugin.yaml.suites[1].name", "is already offered by starforge/basic"),
    (lambda f: (f / "exact_match.py").write_text("import os\n"), "exact_match.py", "is neither task YAML nor data"),
])
def test_a_bad_pack_is_refused_at_its_field_and_nothing_is_stored(
        console: ConsoleProcess, tmp_path: Path, home: tuple[Path, str], change: object, field: str,
        says: str) -> None:
    forge_home, user = home
    folder = _pack(tmp_path, "bad", unique("b"))
    change(folder)  # type: ignore[operator]
    refused = sf("plugin", "publish", str(folder), "--json", home=forge_home)
    assert refused.returncode == 1, refused.stdout
    body = json.loads(refused.stdout) if refused.stdout.strip() else {}
    text = refused.stderr + refused.stdout
    assert field in text and says in text and "The benchmark pack was refused" in text, text
    assert "Traceback" not in text and body.get("problems", [{}])[0].get("hint", "x")
    listed = json.loads(sf("plugin", "ls", "--json", home=forge_home).stdout)["plugins"]
    assert f"{user}/bad" not in [p["id"] for p in listed]

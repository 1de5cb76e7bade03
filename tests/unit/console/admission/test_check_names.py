"""`check_names`: names that become path components are safe segments of at most 100 characters (exp: 255 in all)."""

from __future__ import annotations

from typing import Any

import pytest

from starforge.console.services.admission.checks import check_names

from .contexts import context, job, triples

CODE = "unsafe_path_component"
NAME_HINT = "use a shorter name; sf sets it to the experiment folder's name, so rename the folder"
EXP_HINT = "move the experiment to a shorter folder, e.g. experiments/<name> with a name of at most 100 characters"
PLUGIN_HINT = "use a plugin published under a shorter owner and name"
SAFE = "must start with a letter or digit and hold only letters, digits, '.', '_' and '-' (it becomes a directory name)"


def _plugin(plugin_id: str) -> list[dict[str, str]]:
    return [{"id": plugin_id, "version": "1.0", "digest": "sha256:" + "a" * 64}]


@pytest.mark.parametrize("fields", [
    {},
    {"metadata__name": "n" * 100},
    {"metadata__project": "p" * 100},
    {"metadata__project": "my.lab_2-x"},
    {"spec__source": {"exp": "/".join(["e" * 100] * 2) + "/" + "e" * 53}},  # 255 characters, parts of 100
    {"spec__plugins": _plugin("o" * 100 + "/" + "p" * 100)},
])
def test_names_within_the_limits_pass(fields: dict[str, Any]) -> None:
    assert check_names(context(job(**fields))) == []


def test_a_name_longer_than_100_characters_is_refused_at_metadata_name() -> None:
    [problem] = check_names(context(job(metadata__name="n" * 101)))
    assert triples([problem]) == [("metadata.name", CODE, NAME_HINT)]
    assert problem.message == "metadata.name 'nnnnnnnnnnnnnnnnnnnn…' is 101 characters long; at most 100 are allowed"


@pytest.mark.parametrize(("project", "plain"), [(".hidden", "hidden"), ("_x", "x"), ("-rf", "rf"), ("._-", "my-lab")])
def test_a_project_the_contract_allows_but_a_folder_must_not_start_with_is_refused(project: str, plain: str) -> None:
    [problem] = check_names(context(job(metadata__project=project)))
    assert triples([problem]) == [
        ("metadata.project", CODE, f"rename the lab: set `name: {plain}` in starforge.yaml and commit")]
    assert problem.message == f"metadata.project {project!r} {SAFE}"


def test_a_long_project_is_refused_with_a_name_cut_to_100_characters() -> None:
    [problem] = check_names(context(job(metadata__project="_" + "p" * 120)))
    assert problem.hint == f"rename the lab: set `name: {'p' * 100}` in starforge.yaml and commit"
    assert problem.message == ("metadata.project '_ppppppppppppppppppp…' is 121 characters long; "
                               "at most 100 are allowed")


@pytest.mark.parametrize(("plugin_id", "part"), [("o" * 101 + "/patch", "owner"), ("alice/" + "p" * 101, "name")])
def test_each_part_of_a_plugin_id_is_held_to_100_characters(plugin_id: str, part: str) -> None:
    [problem] = check_names(context(job(spec__plugins=_plugin(plugin_id))))
    assert triples([problem]) == [("spec.plugins[0].id", CODE, PLUGIN_HINT)]
    assert problem.message.startswith(f"plugin {part} ") and "is 101 characters long" in problem.message


def test_an_experiment_part_longer_than_100_characters_is_refused_by_its_number() -> None:
    [problem] = check_names(context(job(spec__source={"exp": "experiments/" + "e" * 101 + "/"})))
    assert triples([problem]) == [("spec.source.exp", CODE, EXP_HINT)]
    assert problem.message == ("spec.source.exp part 2 'eeeeeeeeeeeeeeeeeeee…' is 101 characters long; "
                               "at most 100 are allowed")


def test_an_experiment_path_longer_than_255_characters_is_refused() -> None:
    [problem] = check_names(context(job(spec__source={"exp": "/".join(["e" * 100] * 2) + "/" + "e" * 54})))
    assert triples([problem]) == [("spec.source.exp", CODE, EXP_HINT)]
    assert problem.message == "spec.source.exp is 256 characters long; at most 255 are allowed"


def test_every_problem_is_reported_in_the_contract_s_field_order() -> None:
    spec = job(metadata__name="n" * 101, metadata__project=".lab", spec__plugins=_plugin("o" * 101 + "/" + "p" * 101),
               spec__source={"exp": "x" * 101 + "/" + "y" * 101})
    assert [(p.field, p.message.split(" '")[0]) for p in check_names(context(spec))] == [
        ("metadata.name", "metadata.name"),
        ("metadata.project", "metadata.project"),
        ("spec.plugins[0].id", "plugin owner"),
        ("spec.plugins[0].id", "plugin name"),
        ("spec.source.exp", "spec.source.exp part 1"),
        ("spec.source.exp", "spec.source.exp part 2"),
    ]

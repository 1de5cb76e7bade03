"""`check_plugins`: each pinned plugin matches a published, enabled registry record with the same digest."""

from __future__ import annotations

from dataclasses import replace

import pytest

from starforge.console.services.admission.checks import check_plugins
from starforge.console.services.admission.context import AdmissionContext, Resolutions
from starforge.console.services.registries.plugins import PluginView

from .contexts import context, job, triples

PINNED = "sha256:" + "a" * 64
PLUGINS = [{"id": "alice/patch", "version": "1.0", "digest": PINNED},
           {"id": "bob/reward", "version": "0.3.1", "digest": "sha256:" + "c" * 64}]
PATCH = PluginView("alice", "patch", "1.0", "patch", PINNED, "", True, "public", "/state/plugins/alice/patch/1.0", 10,
                   "alice", 0.0)
REWARD = replace(PATCH, owner="bob", name="reward", version="0.3.1", digest="sha256:" + "c" * 64)


def _ctx(*records: PluginView | None) -> AdmissionContext:
    return context(job(spec__plugins=PLUGINS), resolutions=Resolutions(plugins=records))


def test_a_job_without_plugins_passes() -> None:
    assert check_plugins(context()) == []


def test_plugins_matching_their_records_pass() -> None:
    assert check_plugins(_ctx(PATCH, REWARD)) == []


def test_an_unpublished_plugin_is_refused_at_its_index() -> None:
    [problem] = check_plugins(_ctx(PATCH, None))
    assert triples([problem]) == [("spec.plugins[1]", "plugin_unknown",
                                   "publish it or remove it with `sf plugin remove`")]
    assert problem.message == "plugin bob/reward@0.3.1 is not published here"


def test_a_disabled_plugin_is_refused() -> None:
    [problem] = check_plugins(_ctx(replace(PATCH, enabled=False), REWARD))
    assert triples([problem]) == [("spec.plugins[0]", "plugin_unknown",
                                   "ask its owner to enable it, or remove it from plugins.lock.json")]
    assert problem.message == "plugin alice/patch@1.0 is disabled"


def test_a_digest_other_than_the_registry_s_is_refused_with_the_re_pin_command() -> None:
    other = "sha256:" + "b" * 64
    [problem] = check_plugins(_ctx(replace(PATCH, digest=other), REWARD))
    assert triples([problem]) == [("spec.plugins[0]", "plugin_digest_mismatch",
                                   "run `sf plugin install alice/patch@1.0` to re-pin it")]
    assert problem.message == f"plugin alice/patch@1.0 has digest {other} here, the spec pins {PINNED}"
    assert problem.data == {"expected": other, "got": PINNED}


def test_every_plugin_is_checked() -> None:
    assert [p.field for p in check_plugins(_ctx(None, replace(REWARD, enabled=False)))] == [
        "spec.plugins[0]", "spec.plugins[1]"]


def test_a_resolution_per_plugin_is_required() -> None:
    with pytest.raises(ValueError):  # admission resolves every plugin; a missing answer is a bug, never a pass
        check_plugins(_ctx(PATCH))

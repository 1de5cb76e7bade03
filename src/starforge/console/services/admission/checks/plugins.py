"""Plugins: each (id, version, digest) must match a registry record that is enabled and visible."""

from __future__ import annotations

from .....contract import Problem
from ..context import AdmissionContext

__all__ = ["check_plugins"]


def check_plugins(ctx: AdmissionContext) -> list[Problem]:
    """Refuse plugins that are unknown, disabled, or whose digest differs from the registry's."""
    problems = []
    for i, (plugin, record) in enumerate(zip(ctx.spec.spec.plugins, ctx.resolutions.plugins, strict=True)):
        field = f"spec.plugins[{i}]"
        if record is None:
            problems.append(Problem(field, "plugin_unknown", f"plugin {plugin.id}@{plugin.version} is not published here",
                                    "publish it or remove it with `sf plugin remove`"))
        elif not record.enabled:
            problems.append(Problem(field, "plugin_unknown", f"plugin {plugin.id}@{plugin.version} is disabled",
                                    "ask its owner to enable it, or remove it from plugins.lock.json"))
        elif record.digest != plugin.digest:
            problems.append(
                Problem(field, "plugin_digest_mismatch",
                        f"plugin {plugin.id}@{plugin.version} has digest {record.digest} here, the spec pins {plugin.digest}",
                        f"run `sf plugin install {plugin.id}@{plugin.version}` to re-pin it",
                        {"expected": record.digest, "got": plugin.digest})
            )
    return problems

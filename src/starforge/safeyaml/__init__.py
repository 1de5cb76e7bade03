"""Bounded YAML loading for documents from outside the process: one loader every reader of YAML uses.

    from starforge.safeyaml import load_yaml_bounded, YamlRefused

    data = load_yaml_bounded(text, max_bytes=64 * 1024, what="plugin.yaml")
"""

from ._load import DEFAULT_MAX_DEPTH, EXPANSION_FACTOR, YamlRefused, load_yaml_bounded

__all__ = ["DEFAULT_MAX_DEPTH", "EXPANSION_FACTOR", "YamlRefused", "load_yaml_bounded"]

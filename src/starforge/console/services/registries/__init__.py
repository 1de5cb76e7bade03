"""Registries that admission consults: data assets (corpora, datasets, volumes, environments), plugins, artifacts.

Tier: query (every module runs over the caller's session; the API's use cases are `assets`, `plugin_packages`
and `admin`).
"""

__all__: list[str] = []

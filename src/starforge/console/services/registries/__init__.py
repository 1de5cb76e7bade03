"""Registries that admission consults: data assets (corpora, datasets, volumes, environments), plugins, artifacts."""

__all__: list[str] = []

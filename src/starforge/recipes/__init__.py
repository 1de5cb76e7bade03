"""Recipes: manifests, catalog loading and overlays, digests, hyperparameters, the handshake and recipe gates."""

__all__: list[str] = []

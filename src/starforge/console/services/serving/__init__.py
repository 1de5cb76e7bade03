"""Inference services: a job (`action="serve"`) running an OpenAI-compatible server, reached only through the
console's proxy; what it serves (`references`), how long it lives (`ttl`), who may reach it (`access`), its keys
(`keys`), its life (`lifecycle`) and the official client's playground shapes (`playground`).

Tier: shared (a package: each module names its own tier).
"""

"""Sweeps: their rows (`rows`), the one-decision submit and stop (`actions`), and the ranked reads (`reads`).

Tier: shared (a package: each module names its own tier).
"""

"""Run logs: the append-only store (`store`), the bounded window (`window`) and the live stream (`stream`).

Tier: shared (a package: each module names its own tier).
"""

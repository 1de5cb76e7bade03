"""Benchmarks: the scores runs report (`scores`), the one comparison rule (`compare`), the reads (`reads`) and the
runs of external harnesses (`external`).

Tier: shared (a package: each module names its own tier).
"""

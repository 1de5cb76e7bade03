"""Quota and capacity: an account's caps and usage (`caps`), the daily GPU-hour budget (`budget`), and the pure capacity decision on a snapshot (`capacity`).

Tier: shared (a package: each module names its own tier).
"""

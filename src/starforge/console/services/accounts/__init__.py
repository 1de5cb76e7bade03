"""Accounts: users, roles and credentials (`credentials`), the role policy (`roles`), sign-in, device logins, API tokens, the administrator's use cases and the cache of them all.

Tier: shared (a package: each module names its own tier).
"""

"""Jobs: the doors of a job row (`rows`), its queries and reads, the submission use cases and their writer, control, ingest, follow-ups and a run's files.

Tier: shared (a package: each module names its own tier).
"""

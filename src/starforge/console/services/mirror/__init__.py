"""A job's platform metrics mirrored to an MLflow tracking server: which URLs are allowed (`targets`), the rows
that remember each job's MLflow run and progress (`outbox`), one delivery (`deliver`), the thread that runs them
(`loop.MirrorLoop`, imported by the background start only when mirroring is configured) and what the owner reads
(`mirror_of`).

Tier: shared (the package's public list)."""

from .view import mirror_of

__all__ = ["mirror_of"]

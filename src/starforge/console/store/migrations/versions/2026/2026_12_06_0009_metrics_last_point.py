"""metrics last point: index metrics by (run_id, key, id), so a run's last point of a key is one backward seek

The jobs list shows each run's last primary-metric value; on PostgreSQL an index of (run_id, key) alone reads every
point of the pair to find the newest. The new index serves everything the old one did, which goes.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-06 09:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_metrics_run_key_id', 'metrics', ['run_id', 'key', 'id'], unique=False)
    op.drop_index('ix_metrics_run_key', table_name='metrics')


def downgrade() -> None:
    op.create_index('ix_metrics_run_key', 'metrics', ['run_id', 'key'], unique=False)
    op.drop_index('ix_metrics_run_key_id', table_name='metrics')

"""leadership: the one row naming the process that leads the scheduler, its epoch the fencing token; launches record it

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-08 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        'leadership',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('epoch', sa.Integer(), nullable=False),
        sa.Column('holder', sa.String(length=64), nullable=False),
        sa.Column('console_id', sa.String(length=32), nullable=False),
        sa.Column('host', sa.String(length=255), nullable=False),
        sa.Column('pid', sa.Integer(), nullable=False),
        sa.Column('since', sa.Float(), nullable=False),
        sa.Column('heartbeat', sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_leadership')),
    )
    op.bulk_insert(table, [{'id': 1, 'epoch': 0, 'holder': '', 'console_id': '', 'host': '', 'pid': 0, 'since': 0.0,
                            'heartbeat': 0.0}])
    with op.batch_alter_table('job_attempts') as batch:
        batch.add_column(sa.Column('epoch', sa.Integer(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('job_attempts') as batch:
        batch.drop_column('epoch')
    op.drop_table('leadership')

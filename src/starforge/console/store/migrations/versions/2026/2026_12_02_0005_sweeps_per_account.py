"""sweeps per account: the sweeps table is keyed by (user_id, id), so two accounts may use the same sweep id

Revision ID: 0005
Revises: 0003
Create Date: 2026-12-06 09:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('sweeps', schema=None, recreate='always') as batch_op:
        batch_op.drop_constraint('pk_sweeps', type_='primary')
        batch_op.create_primary_key('pk_sweeps', ['id', 'user_id'])


def downgrade() -> None:
    with op.batch_alter_table('sweeps', schema=None, recreate='always') as batch_op:
        batch_op.drop_constraint('pk_sweeps', type_='primary')
        batch_op.create_primary_key('pk_sweeps', ['id'])

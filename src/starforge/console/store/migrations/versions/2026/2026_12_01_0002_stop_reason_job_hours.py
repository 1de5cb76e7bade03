"""stop reasons, the per-job wall-time quota, and artifact sizes past 2 GiB

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('stop_reason', sa.String(length=2000), nullable=False, server_default=''))
    with op.batch_alter_table('quotas', schema=None) as batch_op:
        batch_op.add_column(sa.Column('max_job_hours', sa.Float(), nullable=False, server_default='0'))
    with op.batch_alter_table('artifacts', schema=None) as batch_op:
        batch_op.alter_column('size_bytes', existing_type=sa.Integer(), type_=sa.BigInteger(), existing_nullable=True)


def downgrade() -> None:
    with op.batch_alter_table('artifacts', schema=None) as batch_op:
        batch_op.alter_column('size_bytes', existing_type=sa.BigInteger(), type_=sa.Integer(), existing_nullable=True)
    with op.batch_alter_table('quotas', schema=None) as batch_op:
        batch_op.drop_column('max_job_hours')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('stop_reason')

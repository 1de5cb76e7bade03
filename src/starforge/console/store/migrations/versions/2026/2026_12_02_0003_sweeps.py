"""sweeps: a job's sweep (jobs.sweep_id) and the sweeps table

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('sweeps',
    sa.Column('id', sa.String(length=160), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('exp', sa.String(length=1024), nullable=False),
    sa.Column('profile', sa.String(length=64), nullable=False),
    sa.Column('max_parallel', sa.Integer(), nullable=False),
    sa.Column('keys_json', sa.Text(), nullable=False),
    sa.Column('points_json', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_sweeps_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_sweeps'))
    )
    with op.batch_alter_table('sweeps', schema=None) as batch_op:
        batch_op.create_index('ix_sweeps_user_created', ['user_id', 'created_at'], unique=False)
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('sweep_id', sa.String(length=160), nullable=False, server_default=''))
        batch_op.create_index('ix_jobs_sweep', ['sweep_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index('ix_jobs_sweep')
        batch_op.drop_column('sweep_id')
    with op.batch_alter_table('sweeps', schema=None) as batch_op:
        batch_op.drop_index('ix_sweeps_user_created')
    op.drop_table('sweeps')

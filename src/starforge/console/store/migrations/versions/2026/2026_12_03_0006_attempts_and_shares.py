"""attempts and fair share: a job's attempts (columns on jobs, the job_attempts table), shares and share usage

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

def _job_columns() -> tuple[sa.Column, ...]:  # type: ignore[type-arg]
    """Return the new columns of `jobs` (new objects each call: a column belongs to one table)."""
    return (
    sa.Column('attempts', sa.Integer(), nullable=False, server_default='0'),
    sa.Column('max_restarts', sa.Integer(), nullable=False, server_default='0'),
    sa.Column('restarts', sa.Integer(), nullable=False, server_default='0'),
    sa.Column('interrupt', sa.String(length=16), nullable=False, server_default=''),
    sa.Column('interrupt_at', sa.Float(), nullable=True),
    sa.Column('interrupt_by', sa.String(length=255), nullable=False, server_default=''),
    sa.Column('resumed_from', sa.Text(), nullable=False, server_default=''),
    sa.Column('resume_step', sa.Integer(), nullable=True),
    sa.Column('attempt_started_at', sa.Float(), nullable=True),
    )


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        for column in _job_columns():
            batch_op.add_column(column)
    op.execute("UPDATE jobs SET attempts = 1, attempt_started_at = started_at WHERE started_at IS NOT NULL")
    op.create_table('job_attempts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('started_at', sa.Float(), nullable=False),
    sa.Column('ended_at', sa.Float(), nullable=True),
    sa.Column('outcome', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('resumed_from', sa.Text(), nullable=False),
    sa.Column('resume_step', sa.Integer(), nullable=True),
    sa.Column('gpus', sa.Integer(), nullable=False),
    sa.Column('executor_ref', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_job_attempts_job_id_jobs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job_attempts')),
    sa.UniqueConstraint('job_id', 'number', name=op.f('uq_job_attempts_job_id')),
    )
    op.create_table('shares',
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('weight', sa.Float(), nullable=False),
    sa.Column('updated_at', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_shares_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('user_id', name=op.f('pk_shares')),
    )
    op.create_table('share_usage',
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('series', sa.String(length=64), nullable=False),
    sa.Column('gpu_seconds', sa.Float(), nullable=False),
    sa.Column('at', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_share_usage_user_id_users'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('user_id', 'series', name=op.f('pk_share_usage')),
    )


def downgrade() -> None:
    op.drop_table('share_usage')
    op.drop_table('shares')
    op.drop_table('job_attempts')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        for column in reversed(_job_columns()):
            batch_op.drop_column(column.name)

"""mlflow mirrors: one row per job whose metrics are mirrored to an MLflow run (where to, how far, its failures)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'mlflow_mirrors',
        sa.Column('job_id', sa.String(length=32), nullable=False),
        sa.Column('tracking_uri', sa.Text(), nullable=False),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('mlflow_run_id', sa.String(length=64), nullable=False),
        sa.Column('sent_point_id', sa.Integer(), nullable=False),
        sa.Column('attempt', sa.Integer(), nullable=False),
        sa.Column('run_status', sa.String(length=16), nullable=False),
        sa.Column('failures', sa.Integer(), nullable=False),
        sa.Column('error', sa.Text(), nullable=False),
        sa.Column('next_try_at', sa.Float(), nullable=False),
        sa.Column('lease_owner', sa.String(length=64), nullable=False),
        sa.Column('lease_expires_at', sa.Float(), nullable=False),
        sa.Column('updated_at', sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('job_id'),
    )
    op.create_index('ix_mlflow_mirrors_state', 'mlflow_mirrors', ['state', 'next_try_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_mlflow_mirrors_state', table_name='mlflow_mirrors')
    op.drop_table('mlflow_mirrors')

"""services and benchmarks: inference services with their API keys, and benchmark scores per run

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'services',
        sa.Column('job_id', sa.String(length=32), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('model_ref', sa.Text(), nullable=False),
        sa.Column('model_path', sa.Text(), nullable=False),
        sa.Column('server', sa.String(length=32), nullable=False),
        sa.Column('gpus', sa.Integer(), nullable=False),
        sa.Column('idle_ttl_s', sa.Float(), nullable=False),
        sa.Column('created_at', sa.Float(), nullable=False),
        sa.Column('last_used_at', sa.Float(), nullable=True),
        sa.Column('expires_at', sa.Float(), nullable=False),
        sa.Column('stopped_at', sa.Float(), nullable=True),
        sa.Column('stop_reason', sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_services_job_id_jobs'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_services_user_id_users'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('job_id', name=op.f('pk_services')),
    )
    op.create_index('ix_services_user', 'services', ['user_id'], unique=False)
    op.create_index('ix_services_expires', 'services', ['expires_at'], unique=False)
    op.create_table(
        'service_keys',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('job_id', sa.String(length=32), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=64), nullable=False),
        sa.Column('token_hash', sa.String(length=128), nullable=False),
        sa.Column('prefix', sa.String(length=16), nullable=False),
        sa.Column('created_at', sa.Float(), nullable=False),
        sa.Column('revoked_at', sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(['job_id'], ['services.job_id'], name=op.f('fk_service_keys_job_id_services'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_service_keys_user_id_users'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_service_keys')),
        sa.UniqueConstraint('token_hash', name=op.f('uq_service_keys_token_hash')),
    )
    op.create_index('ix_service_keys_job', 'service_keys', ['job_id'], unique=False)
    op.create_table(
        'benchmark_scores',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.String(length=32), nullable=False),
        sa.Column('benchmark', sa.String(length=255), nullable=False),
        sa.Column('metric', sa.String(length=255), nullable=False),
        sa.Column('value', sa.Float(), nullable=False),
        sa.Column('stderr', sa.Float(), nullable=True),
        sa.Column('repeat', sa.Integer(), nullable=False),
        sa.Column('runner', sa.String(length=64), nullable=False),
        sa.Column('model', sa.Text(), nullable=False),
        sa.Column('created_at', sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['jobs.id'], name=op.f('fk_benchmark_scores_run_id_jobs'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_benchmark_scores')),
        sa.UniqueConstraint('run_id', 'benchmark', 'metric', 'repeat', name='uq_benchmark_scores_point'),
    )
    op.create_index('ix_benchmark_scores_run', 'benchmark_scores', ['run_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_benchmark_scores_run', table_name='benchmark_scores')
    op.drop_table('benchmark_scores')
    op.drop_index('ix_service_keys_job', table_name='service_keys')
    op.drop_table('service_keys')
    op.drop_index('ix_services_expires', table_name='services')
    op.drop_index('ix_services_user', table_name='services')
    op.drop_table('services')

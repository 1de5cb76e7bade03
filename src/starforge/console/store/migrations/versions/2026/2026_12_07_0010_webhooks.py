"""webhooks: per-account hooks, their deliveries (the outbox of job state changes) and each delivery's attempts

Another helper of issue [7] may add a migration numbered 0010 too: whichever merges second renumbers its own.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'webhooks',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('url', sa.Text(), nullable=False),
        sa.Column('events', sa.String(length=255), nullable=False),
        sa.Column('salt', sa.String(length=64), nullable=False),
        sa.Column('prefix', sa.String(length=16), nullable=False),
        sa.Column('created_at', sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_webhooks_user_id_users'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_webhooks')),
    )
    op.create_index('ix_webhooks_user', 'webhooks', ['user_id'], unique=False)
    op.create_table(
        'webhook_deliveries',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('hook_id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('job_id', sa.String(length=32), nullable=False),
        sa.Column('event', sa.String(length=32), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('created_at', sa.Float(), nullable=False),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('next_at', sa.Float(), nullable=True),
        sa.Column('last_status', sa.Integer(), nullable=True),
        sa.Column('last_error', sa.Text(), nullable=False),
        sa.Column('finished_at', sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(['hook_id'], ['webhooks.id'], name=op.f('fk_webhook_deliveries_hook_id_webhooks'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_webhook_deliveries_user_id_users'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_deliveries')),
    )
    op.create_index('ix_webhook_deliveries_due', 'webhook_deliveries', ['state', 'next_at'], unique=False)
    op.create_index('ix_webhook_deliveries_hook', 'webhook_deliveries', ['hook_id', 'id'], unique=False)
    op.create_index('ix_webhook_deliveries_user', 'webhook_deliveries', ['user_id', 'id'], unique=False)
    op.create_table(
        'webhook_attempts',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('delivery_id', sa.Integer(), nullable=False),
        sa.Column('number', sa.Integer(), nullable=False),
        sa.Column('at', sa.Float(), nullable=False),
        sa.Column('status_code', sa.Integer(), nullable=True),
        sa.Column('error', sa.Text(), nullable=False),
        sa.Column('next_at', sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(['delivery_id'], ['webhook_deliveries.id'],
                                name=op.f('fk_webhook_attempts_delivery_id_webhook_deliveries'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_attempts')),
    )
    op.create_index('ix_webhook_attempts_delivery', 'webhook_attempts', ['delivery_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_webhook_attempts_delivery', table_name='webhook_attempts')
    op.drop_table('webhook_attempts')
    op.drop_index('ix_webhook_deliveries_user', table_name='webhook_deliveries')
    op.drop_index('ix_webhook_deliveries_hook', table_name='webhook_deliveries')
    op.drop_index('ix_webhook_deliveries_due', table_name='webhook_deliveries')
    op.drop_table('webhook_deliveries')
    op.drop_index('ix_webhooks_user', table_name='webhooks')
    op.drop_table('webhooks')

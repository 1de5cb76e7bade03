"""device logins: the requesting address (device_codes.client) with indexes for the per-address cap and the purge;
browser sessions become their own token kind, so the old ones (access tokens of cli_version "web") are revoked

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-05 09:00:00
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('device_codes', schema=None) as batch_op:
        batch_op.add_column(sa.Column('client', sa.String(length=64), nullable=False, server_default=''))
        batch_op.create_index('ix_device_codes_client_expires', ['client', 'expires_at'], unique=False)
        batch_op.create_index('ix_device_codes_expires', ['expires_at'], unique=False)
    # a browser session used to be an access token (and its refresh twin) usable on the API: end those at once
    tokens = sa.table('tokens', sa.column('kind', sa.String), sa.column('cli_version', sa.String),
                      sa.column('revoked_at', sa.Float))
    op.execute(tokens.update()
               .where(tokens.c.cli_version == 'web', tokens.c.kind.in_(('access', 'refresh')),
                      tokens.c.revoked_at.is_(None))
               .values(revoked_at=time.time()))


def downgrade() -> None:
    with op.batch_alter_table('device_codes', schema=None) as batch_op:
        batch_op.drop_index('ix_device_codes_expires')
        batch_op.drop_index('ix_device_codes_client_expires')
        batch_op.drop_column('client')

"""image digest: the digest of the image a job runs on (resolved from its tag when its image is first pulled)

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('image_digest', sa.String(length=80), nullable=False, server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('image_digest')

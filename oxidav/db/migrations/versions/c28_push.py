"""push: the chunks each user staged with the push protocol

Revision ID: c28_push
Revises: b29_login_failures
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

from oxidav.db.base import UTCDateTime

revision = "c28_push"
down_revision = "b29_login_failures"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "push_staged_chunks",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("chunk_hash", sa.String(length=64), nullable=False),
        sa.Column("staged_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_push_staged_chunks_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "chunk_hash", name=op.f("pk_push_staged_chunks")),
    )
    op.create_index("ix_push_staged_chunks_staged_at", "push_staged_chunks", ["staged_at"])


def downgrade() -> None:
    op.drop_index("ix_push_staged_chunks_staged_at", table_name="push_staged_chunks")
    op.drop_table("push_staged_chunks")

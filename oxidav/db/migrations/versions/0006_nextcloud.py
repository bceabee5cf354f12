"""nextcloud

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

import oxidav.db.base

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "nc_upload_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("transfer_id", sa.String(length=255), nullable=False),
        sa.Column("total_length", sa.BigInteger(), nullable=True),
        sa.Column("destination", sa.Text(), nullable=True),
        sa.Column("created_at", oxidav.db.base.UTCDateTime(), nullable=False),
        sa.Column("updated_at", oxidav.db.base.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_nc_upload_sessions_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_nc_upload_sessions")),
        sa.UniqueConstraint("user_id", "transfer_id", name=op.f("uq_nc_upload_sessions_user_id")),
    )
    with op.batch_alter_table("nc_upload_sessions", schema=None) as batch_op:
        batch_op.create_index("ix_nc_upload_sessions_updated_at", ["updated_at"], unique=False)

    op.create_table(
        "nc_upload_chunks",
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("manifest_hash", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("created_at", oxidav.db.base.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["nc_upload_sessions.id"],
            name=op.f("fk_nc_upload_chunks_session_id_nc_upload_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "name", name=op.f("pk_nc_upload_chunks")),
    )

    op.create_table(
        "nc_favorites",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("node_id", sa.Integer(), nullable=False),
        sa.Column("created_at", oxidav.db.base.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_nc_favorites_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "node_id", name=op.f("pk_nc_favorites")),
    )
    with op.batch_alter_table("nc_favorites", schema=None) as batch_op:
        batch_op.create_index("ix_nc_favorites_node_id", ["node_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("nc_favorites", schema=None) as batch_op:
        batch_op.drop_index("ix_nc_favorites_node_id")
    op.drop_table("nc_favorites")
    op.drop_table("nc_upload_chunks")
    with op.batch_alter_table("nc_upload_sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_nc_upload_sessions_updated_at")
    op.drop_table("nc_upload_sessions")

"""public links

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

import oxidav.db.base

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "public_links",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("resource_kind", sa.String(length=16), nullable=False),
        sa.Column("resource_id", sa.Integer(), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=True),
        sa.Column("expires_at", oxidav.db.base.UTCDateTime(), nullable=True),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", oxidav.db.base.UTCDateTime(), nullable=False),
        sa.Column("label", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_public_links_created_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_public_links_owner_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_public_links")),
        sa.UniqueConstraint("token", name=op.f("uq_public_links_token")),
    )
    with op.batch_alter_table("public_links", schema=None) as batch_op:
        batch_op.create_index("ix_public_links_owner_id", ["owner_id"], unique=False)
        batch_op.create_index(
            "ix_public_links_resource", ["resource_kind", "resource_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("public_links", schema=None) as batch_op:
        batch_op.drop_index("ix_public_links_resource")
        batch_op.drop_index("ix_public_links_owner_id")
    op.drop_table("public_links")

"""share overrides

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "share_overrides",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("resource_kind", sa.String(length=16), nullable=False),
        sa.Column("resource_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_share_overrides_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "user_id", "resource_kind", "resource_id", "name", name=op.f("pk_share_overrides")
        ),
    )


def downgrade() -> None:
    op.drop_table("share_overrides")

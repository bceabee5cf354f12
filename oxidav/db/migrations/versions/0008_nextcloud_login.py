"""nextcloud login flow v2

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

import oxidav.db.base

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "nc_login_flows",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("poll_token_sha256", sa.String(length=64), nullable=False),
        sa.Column("login_token_sha256", sa.String(length=64), nullable=False),
        sa.Column("csrf", sa.String(length=64), nullable=False),
        sa.Column("client_name", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("created_at", oxidav.db.base.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_nc_login_flows_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_nc_login_flows")),
        sa.UniqueConstraint(
            "login_token_sha256", name=op.f("uq_nc_login_flows_login_token_sha256")
        ),
        sa.UniqueConstraint("poll_token_sha256", name=op.f("uq_nc_login_flows_poll_token_sha256")),
    )
    with op.batch_alter_table("nc_login_flows", schema=None) as batch_op:
        batch_op.create_index("ix_nc_login_flows_created_at", ["created_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("nc_login_flows", schema=None) as batch_op:
        batch_op.drop_index("ix_nc_login_flows_created_at")
    op.drop_table("nc_login_flows")

"""login failures: failed password checks, counted by every process's throttles

Revision ID: b29_login_failures
Revises: b26_blobops
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "b29_login_failures"
down_revision = "b26_blobops"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "login_failures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("failed_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_failures")),
    )
    op.create_index("ix_login_failures_key_failed_at", "login_failures", ["key", "failed_at"])
    op.create_index("ix_login_failures_failed_at", "login_failures", ["failed_at"])


def downgrade() -> None:
    op.drop_index("ix_login_failures_failed_at", table_name="login_failures")
    op.drop_index("ix_login_failures_key_failed_at", table_name="login_failures")
    op.drop_table("login_failures")

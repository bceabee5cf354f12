"""process presence: one row per running server and per maintenance command, with a heartbeat

Revision ID: b26_blobops
Revises: 0015
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

import oxidav.db.base

revision = "b26_blobops"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "process_presence",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("what", sa.String(length=2048), nullable=False),
        sa.Column("started_at", oxidav.db.base.UTCDateTime(), nullable=False),
        sa.Column("heartbeat_at", oxidav.db.base.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_process_presence")),
    )
    op.create_index("ix_process_presence_kind", "process_presence", ["kind"])


def downgrade() -> None:
    op.drop_index("ix_process_presence_kind", table_name="process_presence")
    op.drop_table("process_presence")

"""inline chunks: a small chunk's bytes in its row

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("blob_chunks", sa.Column("data", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    # A chunk kept in the database has no blob: dropping the column would lose its bytes.
    kept = (
        op.get_bind()
        .execute(sa.text("SELECT COUNT(*) FROM blob_chunks WHERE data IS NOT NULL"))
        .scalar()
    )
    if kept:
        raise RuntimeError(f"{kept} chunk(s) keep their bytes in the database; cannot downgrade")
    with op.batch_alter_table("blob_chunks") as batch:
        batch.drop_column("data")

"""content chunks: a one-chunk content kept in its row is named by its chunk

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable, no default: an O(1) change of the table on SQLite and PostgreSQL alike, and no
    # existing chunk is a content of its own.
    op.add_column("blob_chunks", sa.Column("content_refs", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    # Contents named by their chunk have no manifest row: dropping the count would orphan them.
    named = (
        op.get_bind()
        .execute(sa.text("SELECT COUNT(*) FROM blob_chunks WHERE content_refs IS NOT NULL"))
        .scalar()
    )
    if named:
        raise RuntimeError(f"{named} content(s) are named by their chunk; cannot downgrade")
    with op.batch_alter_table("blob_chunks") as batch:
        batch.drop_column("content_refs")

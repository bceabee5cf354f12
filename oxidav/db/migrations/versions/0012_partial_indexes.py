"""partial indexes: orphaned_at and trash_root_id index only the rows that have one

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

#: (index, table, column): each indexed only where the column is set.
PARTIAL = (
    ("ix_blob_chunks_orphaned_at", "blob_chunks", "orphaned_at"),
    ("ix_blob_manifests_orphaned_at", "blob_manifests", "orphaned_at"),
    ("ix_nodes_trash_root", "nodes", "trash_root_id"),
)


def upgrade() -> None:
    for index, table, column in PARTIAL:
        where = sa.text(f"{column} IS NOT NULL")
        op.drop_index(index, table_name=table)
        op.create_index(index, table, [column], sqlite_where=where, postgresql_where=where)


def downgrade() -> None:
    for index, table, column in PARTIAL:
        op.drop_index(index, table_name=table)
        op.create_index(index, table, [column])

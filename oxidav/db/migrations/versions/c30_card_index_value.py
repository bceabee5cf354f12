"""card index: on SQLite, a covering index (book, prop, value, card) replaces (book, prop)

Revision ID: c30_card_index_value
Revises: c28_push
Create Date: 2026-12-05

PostgreSQL does not get it (a B-tree entry there is limited to ~2.7 kB; see ``CardIndex``).
"""

from alembic import op

revision = "c30_card_index_value"
down_revision = "c28_push"
branch_labels = None
depends_on = None

COVERING = "ix_card_index_book_prop_value"
BOOK_PROP = "ix_card_index_book_prop"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.create_index(COVERING, "card_index", ["addressbook_id", "prop", "value", "card_id"])
        op.drop_index(BOOK_PROP, table_name="card_index")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.create_index(BOOK_PROP, "card_index", ["addressbook_id", "prop"])
        op.drop_index(COVERING, table_name="card_index")

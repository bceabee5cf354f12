"""grant permissions: Nextcloud's bits stored as given instead of a role; reshares die with
their maker

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

#: The bits each former role stood for (``oxidav.authz.grants.roles.Role``).
_ROLE_BITS = {"viewer": 1, "editor": 15, "manager": 31, "owner": 31}


def upgrade() -> None:
    with op.batch_alter_table("grants") as batch:
        batch.add_column(sa.Column("permissions", sa.Integer(), nullable=True))
    bits = sa.case(
        *((sa.column("role") == role, value) for role, value in _ROLE_BITS.items()),
        else_=1,
    )
    op.execute(
        sa.table("grants", sa.column("role"), sa.column("permissions"))
        .update()
        .values(permissions=bits)
    )
    with op.batch_alter_table("grants") as batch:
        batch.alter_column("permissions", existing_type=sa.Integer(), nullable=False)
        batch.drop_column("role")
        batch.drop_constraint("fk_grants_created_by_users", type_="foreignkey")
        batch.create_foreign_key(
            "fk_grants_created_by_users", "users", ["created_by"], ["id"], ondelete="CASCADE"
        )


def downgrade() -> None:
    with op.batch_alter_table("grants") as batch:
        batch.add_column(sa.Column("role", sa.String(length=16), nullable=True))
    grants = sa.table("grants", sa.column("role"), sa.column("permissions"))
    role = sa.case(
        (sa.column("permissions").op("&")(16) != 0, "manager"),
        (sa.column("permissions").op("&")(14) != 0, "editor"),
        else_="viewer",
    )
    op.execute(grants.update().values(role=role))
    with op.batch_alter_table("grants") as batch:
        batch.alter_column("role", existing_type=sa.String(length=16), nullable=False)
        batch.drop_column("permissions")
        batch.drop_constraint("fk_grants_created_by_users", type_="foreignkey")
        batch.create_foreign_key(
            "fk_grants_created_by_users", "users", ["created_by"], ["id"], ondelete="SET NULL"
        )

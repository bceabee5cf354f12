"""mount names: the name each recipient sees a share under, stored (Nextcloud's file_target)

Existing shares get no row here: each is named on its recipient's first request after the
upgrade by the rule that computed it before ((name, node id) order), so nothing a user sees
changes (``oxidav.authz.grants.mount_names``).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mount_names",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("node_id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_mount_names_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_mount_names_owner_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mount_names")),
    )
    op.create_index("uq_mount_names_user_node", "mount_names", ["user_id", "node_id"], unique=True)
    op.create_index("ix_mount_names_owner_id", "mount_names", ["owner_id"])


def downgrade() -> None:
    op.drop_index("ix_mount_names_owner_id", table_name="mount_names")
    op.drop_index("uq_mount_names_user_node", table_name="mount_names")
    op.drop_table("mount_names")

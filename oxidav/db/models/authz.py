"""Tables of the authz room: groups, group members, grants, and the grants generation counter.

- ``user_groups``: named groups of users. ``group_members``: one member per row, a user or a
  nested group (exactly one of the two columns is set; cycles are refused when a row is added).
- ``grants``: a subject (a user or a group) holds permission bits on a resource named by
  ``(resource_kind, resource_id)`` — a folder or file node, a calendar or an address book —
  until ``expires_at`` (None: no expiry). There is no foreign key into the tree, calendars or
  contacts tables (docs/architecture.md#no-foreign-keys-between-rooms); ``owner_id`` records the
  resource's owner so that a grant never applies to another user's resource that later got the same
  id. Subjects are foreign keys to ``users`` / ``user_groups`` so that deleting a user or group
  drops their grants (a reused id must never inherit them). ``created_by`` other than the owner
  marks a reshare: deleting its maker deletes it (it was worth only what the maker held).
- ``authz_state``: one row whose ``generation`` is incremented in the same transaction as every
  change of grants or group membership. Caches of grant rows are valid only for the
  generation they were read under, so a revocation takes effect on the very next request.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from oxidav.db.base import Base, UTCDateTime, partial_index, utcnow


class UserGroup(Base):
    """A named group of users (and of other groups)."""

    __tablename__ = "user_groups"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class GroupMember(Base):
    """``member_user_id`` or ``member_group_id`` (exactly one) is a member of ``group_id``."""

    __tablename__ = "group_members"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("user_groups.id", ondelete="CASCADE"))
    member_user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), nullable=True
    )
    member_group_id: Mapped[int | None] = mapped_column(
        ForeignKey("user_groups.id", ondelete="CASCADE"), nullable=True
    )

    __table_args__ = (
        CheckConstraint("(member_user_id IS NULL) <> (member_group_id IS NULL)", name="one_member"),
        partial_index(
            "uq_group_members_user",
            "group_id",
            "member_user_id",
            unique=True,
            where="member_user_id IS NOT NULL",
        ),
        partial_index(
            "uq_group_members_group",
            "group_id",
            "member_group_id",
            unique=True,
            where="member_group_id IS NOT NULL",
        ),
        # Resolving a user's groups walks upwards: by member user, then by member group.
        Index("ix_group_members_member_user_id", "member_user_id"),
        Index("ix_group_members_member_group_id", "member_group_id"),
    )


class Grant(Base):
    """A subject holds ``permissions`` on the resource ``(resource_kind, resource_id)``."""

    __tablename__ = "grants"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    subject_user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), nullable=True
    )
    subject_group_id: Mapped[int | None] = mapped_column(
        ForeignKey("user_groups.id", ondelete="CASCADE"), nullable=True
    )
    #: ``folder``, ``file``, ``calendar`` or ``addressbook`` (``ResourceKind`` values).
    resource_kind: Mapped[str] = mapped_column(String(16))
    resource_id: Mapped[int] = mapped_column(Integer)
    #: The user the resource belongs to.
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    #: Nextcloud's permission bits (``roles.Permission``): 1 read, 2 update, 4 create,
    #: 8 delete, 16 share; stored exactly as given.
    permissions: Mapped[int] = mapped_column(Integer)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    #: Who made the grant (None: an operator). Deleting them deletes their reshares.
    created_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (
        CheckConstraint(
            "(subject_user_id IS NULL) <> (subject_group_id IS NULL)", name="one_subject"
        ),
        # "grants on these resource ids"
        Index("ix_grants_resource", "resource_kind", "resource_id"),
        # Deleting a user drops the grants on their resources.
        Index("ix_grants_owner_id", "owner_id"),
        # One grant per subject and resource; granting again updates it. These two also serve
        # "grants for these subjects" (``subject_user_id = ?`` implies the partial predicate).
        partial_index(
            "uq_grants_user_resource",
            "subject_user_id",
            "resource_kind",
            "resource_id",
            unique=True,
            where="subject_user_id IS NOT NULL",
        ),
        partial_index(
            "uq_grants_group_resource",
            "subject_group_id",
            "resource_kind",
            "resource_id",
            unique=True,
            where="subject_group_id IS NOT NULL",
        ),
    )


class AuthzState(Base):
    """The single row (``id = 1``) holding the grants generation counter."""

    __tablename__ = "authz_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    generation: Mapped[int] = mapped_column(BigInteger, default=0)

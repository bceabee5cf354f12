"""Grants: a user or group holds permission bits on a resource, until an optional expiry.

Making, changing and revoking grants happens in the caller's transaction, and each first bumps
the grants generation (``oxidav.authz.grants.generation``) so that no cache anywhere keeps allowing
what a revoked grant allowed. Granting the same subject the same resource again updates the
existing grant (its bits and expiry) instead of adding a second one. Bits are stored exactly
as given (``roles.Permission``; a ``Role`` stands for its sum).

Who may *make* a grant (the owner, or a holder of the share bit resharing no more than the bits
they hold) is the caller's question to the engine (``Action.RESHARE``); this module only
records grants. A grant made by someone other than the resource's owner is a reshare, worth
no more than its maker holds (the engine weighs it on every request).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from oxidav.authz.grants import generation
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.authz.grants.roles import ALL, Permission, Role, bits_of
from oxidav.db.base import utcnow
from oxidav.db.models.authz import Grant


class GrantError(ValueError):
    """A grant that cannot be made (to the owner, already expired, unknown grant)."""


class SubjectKind(Enum):
    USER = "user"
    GROUP = "group"


@dataclass(frozen=True)
class Subject:
    """Who a grant is for: one user, or every member of a group (nesting resolved)."""

    kind: SubjectKind
    id: int

    @classmethod
    def user(cls, user_id: int) -> Subject:
        return cls(SubjectKind.USER, user_id)

    @classmethod
    def group(cls, group_id: int) -> Subject:
        return cls(SubjectKind.GROUP, group_id)


@dataclass(frozen=True)
class GrantInfo:
    id: int
    subject: Subject
    resource_kind: ResourceKind
    resource_id: int
    owner_id: int
    permissions: int
    expires_at: datetime | None
    created_by: int | None
    created_at: datetime


def _subject_column(subject: Subject) -> object:
    return Grant.subject_user_id if subject.kind is SubjectKind.USER else Grant.subject_group_id


def grant(
    session: Session,
    subject: Subject,
    resource: Resource,
    access: Role | int,
    *,
    expires_at: datetime | None = None,
    created_by: int | None = None,
) -> int:
    """Give ``subject`` the bits ``access`` on ``resource`` (or change their existing grant);
    its id. Read is required, as in Nextcloud."""
    bits = bits_of(access)
    if bits & ~ALL or not bits & Permission.READ:
        raise GrantError(f"invalid permissions {bits}: 1 (read) is required, 31 is all")
    if subject.kind is SubjectKind.USER and subject.id == resource.owner_id:
        raise GrantError("the owner already holds every right on their own resource")
    if expires_at is not None and expires_at <= utcnow():
        raise GrantError("the expiry date is in the past")
    generation.bump(session)
    existing = session.scalar(
        select(Grant).where(
            _subject_column(subject) == subject.id,  # type: ignore[arg-type]
            Grant.resource_kind == resource.kind.value,
            Grant.resource_id == resource.id,
        )
    )
    if existing is not None:
        existing.permissions = bits
        existing.expires_at = expires_at
        existing.owner_id = resource.owner_id
        session.flush()
        return int(existing.id)
    row = Grant(
        subject_user_id=subject.id if subject.kind is SubjectKind.USER else None,
        subject_group_id=subject.id if subject.kind is SubjectKind.GROUP else None,
        resource_kind=resource.kind.value,
        resource_id=resource.id,
        owner_id=resource.owner_id,
        permissions=bits,
        expires_at=expires_at,
        created_by=created_by,
    )
    session.add(row)
    session.flush()
    return row.id


def revoke(session: Session, grant_id: int) -> None:
    """Delete one grant; ``GrantError`` if there is none with that id."""
    generation.bump(session)
    result = session.execute(
        delete(Grant).where(Grant.id == grant_id).execution_options(synchronize_session=False)
    )
    if getattr(result, "rowcount", 1) == 0:
        raise GrantError(f"no grant {grant_id}")


def revoke_resources(session: Session, kind: ResourceKind, resource_ids: Iterable[int]) -> int:
    """Delete every grant on these resources (they were purged); how many went."""
    ids = list(resource_ids)
    if not ids:
        return 0
    generation.bump(session)
    result = session.execute(
        delete(Grant)
        .where(Grant.resource_kind == kind.value, Grant.resource_id.in_(ids))
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0))


def _info(row: Grant) -> GrantInfo:
    subject = (
        Subject.user(row.subject_user_id)
        if row.subject_user_id is not None
        else Subject.group(int(row.subject_group_id or 0))
    )
    return GrantInfo(
        row.id,
        subject,
        ResourceKind(row.resource_kind),
        row.resource_id,
        row.owner_id,
        row.permissions,
        row.expires_at,
        row.created_by,
        row.created_at,
    )


def list_grants(
    session: Session,
    *,
    resource: Resource | None = None,
    subject: Subject | None = None,
    owner_id: int | None = None,
) -> list[GrantInfo]:
    """Grants (expired ones included), narrowed by resource, subject and/or owner; by id."""
    stmt = select(Grant).order_by(Grant.id)
    if resource is not None:
        stmt = stmt.where(
            Grant.resource_kind == resource.kind.value, Grant.resource_id == resource.id
        )
    if subject is not None:
        stmt = stmt.where(_subject_column(subject) == subject.id)  # type: ignore[arg-type]
    if owner_id is not None:
        stmt = stmt.where(Grant.owner_id == owner_id)
    return [_info(row) for row in session.scalars(stmt)]

"""User accounts and app passwords: create, list, change, delete (used by the CLI and tests),
and storing a re-hashed password (used by the login path)."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from oxidav.authz.authn.passwords import app_password_digest, hash_password, new_app_password
from oxidav.db import Database
from oxidav.db.models.users import AppPassword, User

USERNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


class AccountError(ValueError):
    """A user operation that cannot be done (bad name, duplicate, unknown user)."""


@dataclass(frozen=True)
class UserInfo:
    id: int
    username: str
    display_name: str
    email: str | None
    quota_bytes: int | None
    app_passwords: int


def validate_username(username: str) -> str:
    if not USERNAME_RE.match(username):
        raise AccountError(
            f"invalid user name {username!r}: use 1-64 letters, digits, '_', '.', '@' or '-'"
        )
    return username


def create_user(
    db: Database,
    username: str,
    password: str,
    *,
    email: str | None = None,
    display_name: str = "",
    quota_bytes: int | None = None,
) -> int:
    """Create a user and return its id."""
    validate_username(username)
    if not password:
        raise AccountError("the password must not be empty")
    with db.write() as session:
        if session.scalar(select(User.id).where(User.username == username)) is not None:
            raise AccountError(f"user {username!r} already exists")
        user = User(
            username=username,
            password_hash=hash_password(password),
            email=email,
            display_name=display_name or username,
            quota_bytes=quota_bytes,
        )
        session.add(user)
        session.flush()
        return user.id


def list_users(db: Database) -> list[UserInfo]:
    with db.read() as session:
        counts = (
            select(AppPassword.user_id, func.count().label("n"))
            .group_by(AppPassword.user_id)
            .subquery()
        )
        rows = session.execute(
            select(User, func.coalesce(counts.c.n, 0))
            .outerjoin(counts, counts.c.user_id == User.id)
            .order_by(User.username)
        ).all()
        return [
            UserInfo(u.id, u.username, u.display_name, u.email, u.quota_bytes, int(n))
            for u, n in rows
        ]


def _get_user(session: Session, username: str) -> User:
    user = session.scalar(select(User).where(User.username == username))
    if user is None:
        raise AccountError(f"no user {username!r}")
    return user


def set_password(db: Database, username: str, password: str) -> None:
    if not password:
        raise AccountError("the password must not be empty")
    with db.write() as session:
        _get_user(session, username).password_hash = hash_password(password)


def store_rehashed_password(db: Database, user_id: int, old_hash: str, new_hash: str) -> bool:
    """Replace a user's password hash by the same password hashed with current parameters.

    Only while the stored hash is still ``old_hash``: a password changed meanwhile is kept.
    Returns whether a row was updated.
    """
    with db.write() as session:
        result = session.execute(
            update(User)
            .where(User.id == user_id, User.password_hash == old_hash)
            .values(password_hash=new_hash)
        )
        return bool(getattr(result, "rowcount", 0))


def delete_user(db: Database, username: str) -> None:
    """Delete the user row only (the database cascades their rows).

    Content references (files, upload sessions) are not released here; to remove a user from
    a running installation use ``oxidav.user_removal.remove_user``, which does both.
    """
    with db.write() as session:
        session.delete(_get_user(session, username))


def create_app_password(db: Database, username: str, label: str = "") -> str:
    """Create an app password for ``username`` and return it; only its digest is stored."""
    token = new_app_password()
    with db.write() as session:
        user = _get_user(session, username)
        session.add(
            AppPassword(user_id=user.id, label=label, token_sha256=app_password_digest(token))
        )
    return token


def count_users(db: Database) -> int:
    with db.read() as session:
        return int(session.scalar(select(func.count()).select_from(User)) or 0)


def ensure_first_user(db: Database, password: str = "", username: str = "admin") -> str | None:
    """On a database without users, create ``admin`` and return its password; else None.

    The password is ``password`` if given, else a random one the caller must show once.
    """
    if count_users(db) > 0:
        return None
    chosen = password or secrets.token_urlsafe(12)
    create_user(db, username, chosen)
    return chosen

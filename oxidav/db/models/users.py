"""Users, their app passwords, and the failed password checks the login throttles count."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from oxidav.db.base import Base, UTCDateTime, utcnow


class User(Base):
    """A person who logs in. ``password_hash`` is an argon2id PHC string."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    display_name: Mapped[str] = mapped_column(String(255), default="")
    email: Mapped[str | None] = mapped_column(String(255), nullable=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    quota_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    app_passwords: Mapped[list[AppPassword]] = relationship(
        back_populates="user", cascade="all, delete-orphan", passive_deletes=True
    )


class AppPassword(Base):
    """A generated, high-entropy password for one client of a user (Nextcloud style).

    Only the SHA-256 of the token is stored: the token carries 160 random bits, so a slow hash
    adds nothing against guessing, and a digest lets a login find its row in one indexed lookup
    instead of trying an argon2 verification per app password.
    """

    __tablename__ = "app_passwords"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    label: Mapped[str] = mapped_column(String(255), default="")
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    user: Mapped[User] = relationship(back_populates="app_passwords")


class LoginFailure(Base):
    """One failed password check, kept for the throttles' window so that every process counts
    it (``oxidav.authz.authn.failures``). ``key`` is a digest of what was throttled (a user name
    and address, an address, a link and address), never the name itself; ``failed_at`` is the
    wall-clock time in seconds."""

    __tablename__ = "login_failures"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(64))
    failed_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (
        Index("ix_login_failures_key_failed_at", "key", "failed_at"),
        Index("ix_login_failures_failed_at", "failed_at"),
    )

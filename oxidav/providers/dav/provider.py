"""``CollectionProvider``: what the CalDAV and CardDAV providers have in common.

Both serve per-user homes of collections of text objects. A user sees only their own home
(another user's answers as absent, so nothing is enumerated; a shared collection appears in the
recipient's own home). WsgiDAV resolves the same path several times per request, so a
collection's row is read once per request (``cached_collection``); the default collection
exists from the first look at it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from wsgidav.dav_provider import DAVProvider

from oxidav.providers.dav.users import HomeBackend

BackendT = TypeVar("BackendT", bound=HomeBackend[Any])
InfoT = TypeVar("InfoT")


class CollectionProvider(DAVProvider, Generic[BackendT, InfoT]):  # type: ignore[misc]
    """A provider of per-user homes on ``backend``."""

    #: The environ key of the per-request cache of collection rows.
    cache_key: ClassVar[str]
    #: The URI of the collection every home has.
    default_uri: ClassVar[str]

    def __init__(self, backend: BackendT) -> None:
        super().__init__()
        self.backend = backend

    @staticmethod
    def authenticated(environ: dict[str, Any]) -> str:
        """The authenticated user's name ("" without one)."""
        return str(environ.get("wsgidav.auth.user_name") or "")

    def visible(self, environ: dict[str, Any], username: str) -> bool:
        """Whether the home of ``username`` exists for this request's user."""
        authenticated = self.authenticated(environ)
        return not authenticated or authenticated == username

    def cached_collection(self, environ: dict[str, Any], user_id: int, uri: str) -> InfoT | None:
        """The row of collection ``uri`` of ``user_id``, read once per request."""
        cache: dict[tuple[int, str], InfoT | None] = environ.setdefault(self.cache_key, {})
        key = (user_id, uri)
        if key not in cache:
            info: InfoT | None = self.backend.store.collection(user_id, uri)
            if info is None and uri == self.default_uri:
                self.backend.store.ensure_default(user_id)
                info = self.backend.store.collection(user_id, uri)
            cache[key] = info
        return cache[key]

    def forget_collection(self, environ: dict[str, Any], user_id: int, uri: str) -> None:
        """Drop a row this request cached (the collection was deleted or moved)."""
        environ.get(self.cache_key, {}).pop((user_id, uri), None)

"""``FilesProvider``: every user's file tree over WebDAV (RFC 4918 class 1, 2 and 3).

Mounted by oxidav at ``/remote.php/dav/files`` (the next path segment names the user) and at
``/remote.php/webdav`` (the authenticated user's tree, Nextcloud's legacy URL). It works in
any WsgiDAV configuration; ``examples/embed.py`` shows the smallest one::

    chain = BlobChain.from_settings(settings, db)
    config = {
        "provider_mapping": {"/dav": FilesProvider(db, chain, user_from="auth")},
        "lock_storage": DbLockStorage(db),
        ...
    }

A request sees only the tree of the user it authenticated as: a path in another user's tree
is not found (404), whatever the middleware in front — except where the authz layer admitted it
into another tree (``TreeView``s: shares mounted in the caller's tree, public links; a share
reached by its owner's URL). Paths are NFC-normalized and validated
by ``oxidav.tree.names``, so neither ``..`` nor an encoded ``/`` leaves the user's root.
Locks are keyed by the canonical ``…/files/<user>/<path>`` URL, so a lock taken through one
mount is honoured through the other.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any, Literal
from urllib.parse import quote, unquote

from wsgidav.dav_provider import DAVProvider

from oxidav.authz.grants.mounts import mounts_of
from oxidav.authz.grants.views import view_for, views_of
from oxidav.blobs import BlobChain
from oxidav.db import Database
from oxidav.environ import ENVIRON_ACTING_FOR
from oxidav.providers.files.context import FilesBackend, Target
from oxidav.providers.files.handlers import dispatch
from oxidav.providers.files.locks import DbLockStorage
from oxidav.providers.files.resources import FileResource, FilesHome, FolderResource
from oxidav.settings import Settings
from oxidav.tree import InvalidName, NodeInfo, normalize_path

#: ``locate`` result for the collection above the users' homes (path mode only).
HOME = "home"
#: The environ of the request this thread is handling (set around WsgiDAV's handlers).
_serving: ContextVar[dict[str, Any] | None] = ContextVar("oxidav_files_serving", default=None)


class FilesProvider(DAVProvider):  # type: ignore[misc]
    """The files of every user, backed by ``oxidav.tree`` and the blob chain.

    ``user_from="path"``: the first path segment below the mount names the user
    (``/remote.php/dav/files/alice/…``). ``user_from="auth"``: the mount is the authenticated
    user's root (``/remote.php/webdav/…``); ``canonical_share`` is then the share path of the
    per-user mount, used for lock keys. ``user_from="view"``: only what the authz layer mapped
    through a ``TreeView`` exists (``/public.php/webdav``: a public link's tree).
    """

    def __init__(
        self,
        db: Database,
        chain: BlobChain,
        *,
        user_from: Literal["path", "auth", "view"] = "path",
        canonical_share: str | None = None,
        default_quota_bytes: int = 0,
        propfind_infinity_limit: int = 0,
    ) -> None:
        super().__init__()
        self.backend = FilesBackend(
            db,
            chain,
            default_quota_bytes=default_quota_bytes,
            propfind_infinity_limit=propfind_infinity_limit,
        )
        self.user_from = user_from
        self.canonical_share = canonical_share

    @classmethod
    def from_settings(
        cls, settings: Settings, db: Database, chain: BlobChain, **options: Any
    ) -> FilesProvider:
        return cls(
            db,
            chain,
            default_quota_bytes=settings.default_quota_bytes,
            propfind_infinity_limit=settings.propfind_infinity_limit,
            **options,
        )

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(user_from={self.user_from!r})"

    # -- mapping paths to trees -----------------------------------------------------------

    def locate(self, path: str, environ: dict[str, Any]) -> Target | str | None:
        """The tree place of a share-relative ``path``; ``HOME`` for the homes collection;
        None if it is not the caller's or cannot name a node."""
        viewed = self._locate_in_view(path, environ)
        if viewed is not None:
            return viewed
        if self.user_from == "view":
            return None
        # A request the authz middleware admitted into another user's tree (a share) acts in
        # the owner's tree; everyone else acts in their own.
        user = environ.get(ENVIRON_ACTING_FOR) or environ.get("wsgidav.auth.user_name") or ""
        if self.user_from == "path":
            owner, _, rest = path.strip("/").partition("/")
            if owner == "":
                return HOME
            if owner != user:
                return None
        else:
            rest = path
        if not user:
            return None
        try:
            tree_path = normalize_path(rest)
        except InvalidName:
            return None
        user_id = self.backend.user_id(user)
        if user_id is None:
            return None
        return Target(user, user_id, tree_path)

    def name_error(self, path: str) -> str | None:
        """Why the share-relative ``path`` can name no node (a name too long, ``..``, a NUL),
        or None: a request that would create it answers 400 with this reason, not 404."""
        rest = path.strip("/").partition("/")[2] if self.user_from == "path" else path
        try:
            normalize_path(rest)
        except InvalidName as exc:
            return str(exc)
        return None

    def _locate_in_view(self, path: str, environ: dict[str, Any]) -> Target | None:
        """The owner's place of a path the authz layer admitted through a ``TreeView``."""
        if not views_of(environ):
            return None
        found = view_for(environ, self.share_path + path)
        if found is None:
            return None
        view, tree_path = found
        try:
            return Target(view.owner, view.owner_id, normalize_path(tree_path))
        except InvalidName:
            return None

    def get_resource_inst(
        self, path: str, environ: dict[str, Any]
    ) -> FileResource | FolderResource | FilesHome | None:
        target = self.locate(path, environ)
        if target == HOME:
            return FilesHome(path, environ)
        if not isinstance(target, Target):
            return None
        node = self.backend.node(environ, target)
        if node is None:
            return None
        node = self._as_seen(path, environ, target, node)
        if node.is_folder and views_of(environ):
            node = self._as_drop_root(path, environ, node)
        cls = FolderResource if node.is_folder else FileResource
        return cls(path, environ, target, node, None)

    def _as_seen(
        self, path: str, environ: dict[str, Any], target: Target, node: NodeInfo
    ) -> NodeInfo:
        """A mount point carries its mount name; the caller's folders at or above their
        mounts carry the rolled-up etag (``oxidav.authz.grants.mounts``)."""
        mounts = mounts_of(environ)
        if mounts is None:
            return node
        if target.user_id == mounts.user_id:
            if node.is_folder and mounts.rolls_up(target.tree_path):
                return node._replace(etag=mounts.etag(node.etag))
            return node
        found = view_for(environ, self.share_path + path)
        if found is not None and found[1] == found[0].tree_root:
            name = unicodedata.normalize("NFC", found[0].url_root.rsplit("/", 1)[1])
            return node._replace(name=name)
        return node

    def _as_drop_root(self, path: str, environ: dict[str, Any], node: NodeInfo) -> NodeInfo:
        """A file drop's own folder (the one node a dropper may describe) carries nothing that
        moves with what it holds: size 0, its creation time, an etag of its id alone."""
        found = view_for(environ, self.share_path + path)
        if found is None or not found[0].drop or found[1] != found[0].tree_root:
            return node
        etag = hashlib.sha256(f"oxidav drop {node.id}".encode()).hexdigest()[:16]
        return node._replace(size=0, mtime=node.created_at, etag=etag)

    def exists(self, path: str, environ: dict[str, Any]) -> bool:
        return self.get_resource_inst(path, environ) is not None

    def is_collection(self, path: str, environ: dict[str, Any]) -> bool:
        res = self.get_resource_inst(path, environ)
        return res is not None and bool(res.is_collection)

    def set_lock_manager(self, lock_manager: Any) -> None:
        """Use the batched ``DbLockManager`` whenever the locks live in the database."""
        storage = getattr(lock_manager, "storage", None)
        if isinstance(storage, DbLockStorage):
            lock_manager = storage.batched_manager()
        super().set_lock_manager(lock_manager)

    # -- lock keys ------------------------------------------------------------------------

    def _ref_base(self) -> str:
        return self.canonical_share if self.canonical_share is not None else self.share_path

    def ref_url(self, target: Target, is_collection: bool) -> str:
        """The canonical quoted URL of a node, the key of its locks."""
        suffix = "/" if is_collection else ""
        return quote(f"{self._ref_base()}/{target.username}{target.tree_path}{suffix}")

    def ref_url_to_path(self, ref_url: str) -> str:
        """Inverse of ``ref_url``: the share-relative path of this mount — in the URL space
        of the request being served when it reaches the node through a view (a share in the
        caller's tree, a public link; WsgiDAV asks this without the environ, e.g. to answer
        a lock refresh)."""
        path = unquote(ref_url)
        base = self._ref_base()
        if path.startswith(base):
            path = path[len(base) :]
        path = "/" + path.lstrip("/")
        environ = _serving.get()
        if environ is not None and views_of(environ):
            owner, _, rest = path.lstrip("/").partition("/")
            tree_path = "/" + rest if rest else ""
            for view in views_of(environ):
                root = view.tree_root
                if view.owner == owner and (tree_path == root or tree_path.startswith(root + "/")):
                    url = view.url_root + tree_path[len(root) :]
                    if url.startswith(self.share_path):
                        return url[len(self.share_path) :] or "/"
        if self.user_from == "auth":
            path = "/" + path.lstrip("/").partition("/")[2]
        return path

    # -- requests -------------------------------------------------------------------------

    def custom_request_handler(
        self, environ: dict[str, Any], start_response: Any, default_handler: Any
    ) -> Iterable[bytes]:
        token = _serving.set(environ)
        try:
            return dispatch(self, environ, start_response, default_handler)
        finally:
            _serving.reset(token)

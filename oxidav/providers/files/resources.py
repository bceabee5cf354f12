"""WsgiDAV resources of the files provider: ``FileResource``, ``FolderResource`` and the
``FilesHome`` collection that lists the user's home at ``/remote.php/dav/files/``.

A resource is built from one ``NodeInfo`` row and never queries for its own live properties.
``FolderResource.get_member_list`` loads the folder's children with one keyset query per 1000
names and builds them directly (no ``get_resource_inst`` per child); ``iter_member_rows`` gives
them as ``MemberRow``s instead, for an answer written from the rows, which builds a member's
resource only when a property needs it, and ``iter_listed_members`` as ``ListedMember``s, for an
answer that shows only what a file browser's columns show, which have no resource at all (both
in ``oxidav.providers.files.members``).
Writes go through ``oxidav.tree`` in one transaction each: MKCOL, DELETE (to the trash,
dropping the locks below), COPY and MOVE (``handle_copy`` / ``handle_move``; WsgiDAV has
checked locks and If headers).

Mounts (``authz.grants.mounts``): the caller's mount folder also lists their mount points — the
owners' nodes under their mount names, built from the mount table the authz middleware loaded
(no query per mount) and sharing one ``Page`` — and the caller's folders at or above the mount
folder answer with the rolled-up etag, so a change inside a share reaches the caller's root.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

from sqlalchemy.orm import Session
from wsgidav import util
from wsgidav.dav_error import HTTP_FORBIDDEN, DAVError
from wsgidav.dav_provider import DAVCollection, DAVNonCollection

from oxidav.authz.grants.mounts import mounts_of
from oxidav.environ import ENVIRON_CREATED, ENVIRON_NODE
from oxidav.providers.files.context import Target, dav_error, forget
from oxidav.providers.files.members import ChildT, ListedMember, MemberRow, keyset_pages
from oxidav.providers.files.props import NodeProperties, Page
from oxidav.tree import (
    TreeError,
    copy_node,
    make_folder,
    move_node,
    normalize_name,
    read_children,
    read_children_brief,
    read_listed_rows,
    trash_node,
    write_file,
)
from oxidav.tree import locks as lock_rows
from oxidav.tree.moves import TransferResult
from oxidav.tree.transfers import transfer_node
from oxidav.tree.trash_room import make_room_after_delete
from oxidav.tree.types import NodeInfo

#: Children fetched per keyset query.
PAGE_SIZE = 1000
HREF_SAFE = "/!*'(),$-_|."
#: A name made only of characters ``quote(name, safe=HREF_SAFE)`` leaves alone.
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~/!*'(),$|-]*\Z")


class _NodeResource(NodeProperties):
    """What files and folders share: identity, memoized URLs, live getters."""

    provider: Any
    path: str
    name: str
    is_collection: bool
    environ: dict[str, Any]
    #: From WsgiDAV's ``_DAVResource`` (declared here for the type checker only).
    get_preferred_path: Callable[[], str]

    def _bind(self, target: Target, node: NodeInfo, page: Page | None) -> None:
        self.target = target
        self.node = node
        self._ref: str | None = None
        self._href: str | None = None
        self._page = page

    @property
    def page(self) -> Page:
        """The ``Page`` the resource was listed in, or its own one-node page, built on first
        need (a GET never reads properties or locks through it)."""
        if self._page is None:
            self._page = Page(
                self.provider.backend,
                self.environ,
                [self.node],
                lock_rows.normalize_root(self.get_ref_url()),
                listing=False,
            )
        return self._page

    @page.setter
    def page(self, page: Page) -> None:
        self._page = page

    def get_ref_url(self) -> str:
        """The lock key: the canonical files URL, the same through every alias mount."""
        if self._ref is None:
            self._ref = self.provider.ref_url(self.target, self.is_collection)
        return self._ref

    def get_href(self) -> str:
        if self._href is None:
            self._href = quote(
                self.provider.mount_path + self.provider.share_path + self.get_preferred_path(),
                safe=HREF_SAFE,
            )
        return self._href

    def get_etag(self) -> str:
        return self.node.etag

    def support_etag(self) -> bool:
        return True

    def get_last_modified(self) -> float:
        return self.node.mtime.timestamp()

    def get_creation_date(self) -> float:
        return self.node.created_at.timestamp()

    def get_display_name(self) -> str:
        return self.node.name or self.target.username

    def _fail(self, exc: TreeError) -> DAVError:
        return dav_error(exc)

    def _tree_target(self, dest_path: str) -> Target:
        """Where a COPY/MOVE lands: in this tree, or in another user's tree that the authz
        layer admitted (a share) — then the rows cross over (``oxidav.tree.transfers``)."""
        target = self.provider.locate(dest_path, self.environ)
        if not isinstance(target, Target):
            raise DAVError(HTTP_FORBIDDEN, "the destination is outside this tree")
        return target

    def handle_delete(self) -> bool:
        """DELETE (RFC 4918 §9.6): trash the subtree and drop its locks, in one transaction."""
        manager = self.provider.lock_manager
        if manager is not None:
            util.parse_if_header_dict(self.environ)
            manager.check_write_permission(
                url=self.get_ref_url(),
                depth="infinity",
                token_list=self.environ["wsgidav.ifLockTokenList"],
                principal=self.environ["wsgidav.user_name"],
            )
        try:
            with self.provider.backend.db.write() as session:
                trash_node(session, self.target.user_id, self.target.tree_path)
                backend = self.provider.backend
                make_room_after_delete(
                    session, backend.chain, self.target.user_id, backend.default_quota_bytes
                )
                lock_rows.delete_locks(session, self.get_ref_url())
        except TreeError as exc:
            raise self._fail(exc) from None
        forget(self.environ)
        return True

    def handle_move(self, dest_path: str) -> bool:
        """MOVE (§9.9): one row update plus a path-prefix rewrite; source locks are dropped."""
        dest = self._tree_target(dest_path)
        overwrite = self.environ.get("HTTP_OVERWRITE", "T") == "T"
        dest_ref = self.provider.ref_url(dest, False)
        backend = self.provider.backend
        try:
            with backend.db.write() as session:
                if dest.user_id == self.target.user_id:
                    result = move_node(
                        session,
                        self.target.user_id,
                        self.target.tree_path,
                        dest.tree_path,
                        overwrite=overwrite,
                    )
                else:
                    result = self._transfer(session, dest, move=True, depth_infinity=True)
                lock_rows.delete_locks(session, self.get_ref_url())
                if not result.created:
                    lock_rows.delete_locks(session, dest_ref)
        except TreeError as exc:
            raise self._fail(exc) from None
        self._transferred(result.node, result.created)
        return True

    def handle_copy(self, dest_path: str, *, depth_infinity: bool) -> bool:
        """COPY (§9.8): new rows sharing the content (one incref each), dead props copied."""
        dest = self._tree_target(dest_path)
        overwrite = self.environ.get("HTTP_OVERWRITE", "T") == "T"
        backend = self.provider.backend
        try:
            with backend.db.write() as session:
                if dest.user_id != self.target.user_id:
                    result = self._transfer(
                        session, dest, move=False, depth_infinity=depth_infinity
                    )
                else:
                    result = copy_node(
                        session,
                        backend.chain,
                        self.target.user_id,
                        self.target.tree_path,
                        dest.tree_path,
                        overwrite=overwrite,
                        depth_infinity=depth_infinity,
                        default_quota_bytes=backend.default_quota_bytes,
                    )
                if not result.created:
                    lock_rows.delete_locks(session, self.provider.ref_url(dest, False))
        except TreeError as exc:
            raise self._fail(exc) from None
        self._transferred(result.node, result.created)
        return True

    def _transfer(
        self, session: Session, dest: Target, *, move: bool, depth_infinity: bool
    ) -> TransferResult:
        """COPY/MOVE into another user's tree (into, out of or between shares)."""
        backend = self.provider.backend
        return transfer_node(
            session,
            backend.chain,
            self.target.user_id,
            self.target.tree_path,
            dest.user_id,
            dest.tree_path,
            move=move,
            overwrite=self.environ.get("HTTP_OVERWRITE", "T") == "T",
            depth_infinity=depth_infinity,
            default_quota_bytes=backend.default_quota_bytes,
        )

    def _transferred(self, node: NodeInfo, created: bool) -> None:
        forget(self.environ)
        self.environ[ENVIRON_NODE] = node
        self.environ[ENVIRON_CREATED] = created

    def set_last_modified(self, dest_path: str, time_stamp: Any, *, dry_run: bool) -> bool:
        """Used by WsgiDAV for X-OC-Mtime on MKCOL (``honor_mtime_header``)."""
        from datetime import UTC, datetime

        from oxidav.tree import set_mtime

        if not dry_run:
            with self.provider.backend.db.write() as session:
                set_mtime(session, self.node.id, datetime.fromtimestamp(float(time_stamp), UTC))
            forget(self.environ)
        return True


class FileResource(_NodeResource, DAVNonCollection):  # type: ignore[misc]
    def __init__(
        self, path: str, environ: dict[str, Any], target: Target, node: NodeInfo, page: Page | None
    ) -> None:
        DAVNonCollection.__init__(self, path, environ)
        self._bind(target, node, page)

    def get_content_length(self) -> int:
        return self.node.size

    def get_content_type(self) -> str:
        return self.node.mime_type

    def support_ranges(self) -> bool:
        return True

    def get_content(self) -> Any:
        """A seekable reader over the current version (the empty file has no manifest)."""
        if self.node.manifest_hash is None:
            return io.BytesIO(b"")
        return self.provider.backend.chain.open(self.node.manifest_hash, self.node.size)


class FolderResource(_NodeResource, DAVCollection):  # type: ignore[misc]
    def __init__(
        self, path: str, environ: dict[str, Any], target: Target, node: NodeInfo, page: Page | None
    ) -> None:
        DAVCollection.__init__(self, path, environ)
        self._bind(target, node, page)
        self._members: list[_NodeResource] | None = None

    def get_used_bytes(self) -> int:
        return self.node.size

    def get_available_bytes(self) -> int | None:
        available: int | None = self.provider.backend.quota(self.environ, self.node.user_id)[1]
        return available

    def iter_member_pages(
        self, size: int | None = None
    ) -> Iterator[list[FileResource | FolderResource]]:
        """The members in name order, one page at a time: one keyset query per page, and one
        ``Page`` whose dead properties, locks and enrichment are batched for that page."""
        for children, page in self._child_pages(size, brief=False):
            yield [self.member(child, href, page) for child, href in self._listed(children)]
        mounted = self.mount_members()
        if mounted:
            yield mounted

    def iter_member_rows(
        self, brief: bool = False
    ) -> Iterator[list[MemberRow] | list[FileResource | FolderResource]]:
        """``iter_member_pages`` for an answer written from the rows: each child as a
        ``MemberRow`` (its resource built only if asked for); mount points as resources.
        ``brief``: for an answer that shows no creation date; the children's nodes are read
        with ``read_children_brief`` (their ``created_at`` is None)."""
        for children, page in self._child_pages(None, brief):
            yield [MemberRow(child, href, self, page) for child, href in self._listed(children)]
        mounted = self.mount_members()
        if mounted:
            yield mounted

    def iter_listed_members(self) -> Iterator[list[ListedMember]]:
        """The children for an answer that shows only what a ``ListedRow`` holds, one page at a
        time, each as a ``ListedMember`` (read with ``read_listed_rows``); the mount points are
        not among them (``mount_members``)."""
        db, folder_id = self.provider.backend.db, self.node.id
        pages = keyset_pages(
            lambda after: read_listed_rows(db, folder_id, after=after, limit=PAGE_SIZE), PAGE_SIZE
        )
        for rows in pages:
            yield [ListedMember(row, href) for row, href in self._listed(rows)]

    def _child_pages(self, size: int | None, brief: bool) -> Iterator[tuple[list[NodeInfo], Page]]:
        """The children in name order, a page of ``size`` at a time, with the page's ``Page``."""
        size = size or PAGE_SIZE
        lock_root = lock_rows.normalize_root(self.get_ref_url())
        db, folder = self.provider.backend.db, self.node

        def read(after: str | None) -> list[NodeInfo]:
            if brief:
                return read_children_brief(db, folder, after=after, limit=size)
            return read_children(db, folder.id, after=after, limit=size)

        for children in keyset_pages(read, size):
            yield (
                children,
                Page(self.provider.backend, self.environ, children, lock_root, listing=True),
            )

    def _listed(self, children: list[ChildT]) -> list[tuple[ChildT, str]]:
        """Each child as this folder lists it: a folder holding mount points with its rolled-up
        etag, and its href, made from the folder's, quoted once, plus the quoted name (a
        5000-file PROPFIND spent a fifth of its time building hrefs and resources)."""
        mounts = mounts_of(self.environ)
        if mounts is not None and self.target.user_id != mounts.user_id:
            mounts = None
        provider = self.provider
        base = f"{self.path.rstrip('/')}/"
        href_base = quote(provider.mount_path + provider.share_path + base, safe=HREF_SAFE)
        tree_base = f"{self.node.path.rstrip('/')}/"  # a child's path: this plus its name
        listed: list[tuple[ChildT, str]] = []
        for child in children:
            name = child.name
            href = href_base + (name if _UNQUOTED.match(name) else quote(name, safe=HREF_SAFE))
            if child.is_folder:
                if mounts is not None and mounts.rolls_up(tree_base + name):
                    child = child._replace(etag=mounts.etag(child.etag))
                href += "/"
            listed.append((child, href))
        return listed

    def member(self, child: NodeInfo, href: str, page: Page) -> FileResource | FolderResource:
        """The resource of ``child`` (as ``_listed`` gives it), listed in ``page``: built
        without WsgiDAV's constructor, which re-derives each name from its path."""
        member: FileResource | FolderResource
        if child.is_folder:
            member = FolderResource.__new__(FolderResource)
            member._members = None
        else:
            member = FileResource.__new__(FileResource)
        # What WsgiDAV's _DAVResource.__init__ sets (a test compares the two).
        member.provider = self.provider
        member.path = f"{self.path.rstrip('/')}/{child.name}"
        member.is_collection = child.is_folder
        member.environ = self.environ
        member.name = child.name
        member._bind(Target(self.target.username, self.target.user_id, child.path), child, page)
        member._href = href
        return member

    def mount_members(self) -> list[FileResource | FolderResource]:
        """The mount points of this folder if it is the caller's mount folder: the owners'
        nodes under their mount names, with one ``Page`` (so one batched query per kind of
        property) for all of them."""
        mounts = mounts_of(self.environ)
        if (
            mounts is None
            or self.target.user_id != mounts.user_id
            or self.target.tree_path != mounts.folder
        ):
            return []
        nodes = [m.node._replace(name=m.name) for m in mounts.mounts]
        targets = [Target(m.owner, m.node.user_id, m.node.path) for m in mounts.mounts]
        roots = [
            lock_rows.normalize_root(self.provider.ref_url(t, n.is_folder))
            for t, n in zip(targets, nodes, strict=True)
        ]
        page = _MountPage(self.provider.backend, self.environ, nodes, roots)
        base = self.path.rstrip("/")
        return [
            (FolderResource if node.is_folder else FileResource)(
                f"{base}/{node.name}", self.environ, target, node, page
            )
            for node, target in zip(nodes, targets, strict=True)
        ]

    def get_member_list(self) -> list[_NodeResource]:
        if self._members is None:
            self._members = [m for batch in self.iter_member_pages() for m in batch]
        return self._members

    def get_member_names(self) -> list[str]:
        return [member.node.name for member in self.get_member_list()]

    def get_member(self, name: str) -> _NodeResource | None:
        resource: _NodeResource | None = self.provider.get_resource_inst(
            util.join_uri(self.path, name), self.environ
        )
        return resource

    def support_recursive_delete(self) -> bool:
        return True

    def support_recursive_move(self, dest_path: str) -> bool:
        return True

    def delete(self) -> None:
        self.handle_delete()

    def create_collection(self, name: str) -> None:
        """MKCOL (RFC 4918 §9.3)."""
        path = self._child_path(name)
        try:
            with self.provider.backend.db.write() as session:
                node = make_folder(session, self.target.user_id, path)
        except TreeError as exc:
            raise self._fail(exc) from None
        forget(self.environ)
        self.environ[ENVIRON_NODE] = node

    def create_empty_resource(self, name: str) -> FileResource:
        """An empty file: used by LOCK on an unmapped URL (§7.3); PUT has its own handler."""
        path = self._child_path(name)
        backend = self.provider.backend
        try:
            with backend.db.write() as session:
                result = write_file(
                    session, backend.chain, self.target.user_id, path, None, require_absent=True
                )
        except TreeError as exc:
            raise self._fail(exc) from None
        forget(self.environ)
        self.environ[ENVIRON_NODE] = result.node
        target = Target(self.target.username, self.target.user_id, path)
        return FileResource(util.join_uri(self.path, name), self.environ, target, result.node, None)

    def _child_path(self, name: str) -> str:
        try:
            return f"{self.target.tree_path}/{normalize_name(name)}"
        except TreeError as exc:
            raise self._fail(exc) from None


class _MountPage(Page):
    """The ``Page`` of a folder's mount points: their locks are rooted in several trees."""

    def __init__(
        self,
        backend: Any,
        environ: dict[str, Any],
        nodes: list[NodeInfo],
        lock_roots: list[str],
    ) -> None:
        super().__init__(backend, environ, nodes, "/", listing=False)
        self.lock_roots = lock_roots
        self._mount_locks: dict[str, list[dict[str, Any]]] | None = None

    def locks(self, root: str) -> list[dict[str, Any]]:
        if self._mount_locks is None:
            with self.backend.db.read() as session:
                found = lock_rows.list_locks_at(session, self.lock_roots)
            self._mount_locks = {}
            for lock in found:
                self._mount_locks.setdefault(lock["root"], []).append(lock)
        return self._mount_locks.get(root, [])

    def holds_no_locks(self, manager: Any) -> bool:
        return False  # its nodes' locks are rooted in several trees: asked node by node


class FilesHome(DAVCollection):  # type: ignore[misc]
    """``/remote.php/dav/files/``: a read-only collection holding the caller's home only."""

    def get_member_names(self) -> list[str]:
        user = self.environ.get("wsgidav.auth.user_name")
        if user and self.provider.locate("/" + user, self.environ) is not None:
            return [user]
        return []

    def get_display_name(self) -> str:
        return "files"

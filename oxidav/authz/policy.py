"""Who may touch which path: the single place where a request's access decision is made.

**Own paths** (the user-scoped collections that carry the caller's own name, and every path
that is not user-scoped) are allowed at once: no grant query is made.

**Another user's home** (``/remote.php/dav/files/<owner>/…``, and their calendars, address
books, uploads and trashbin) answers 404, whatever grants exist, as in Nextcloud: a user sees
only their own home. What is shared with them is reached through their mounts.

**Mounts** (``oxidav.authz.grants.mounts``): a path in the caller's own tree that lies below one of
their mount points (a share shown in their tree) is mapped to the owner's node, resolved
through the tree's read API, and every question that ``http_actions.questions`` lists for the
method is put to the grant engine. A denial carries the engine's status: 404 when the caller
holds no bit there (a 403 would reveal that the resource exists), 403 when they can already
see it. A resource that does not exist answers 404 as well. The verdict carries the
``TreeView`` by which the files provider serves it. MOVE of a mount point to a free name in
the share folder renames it for the caller alone (its stored name, ``mount_names``); it cannot
be moved elsewhere or overwritten (403); DELETE of it removes the caller's own grant
(Nextcloud's "unshare"), and is refused (403) for a group's.

**Writers outside the files provider** (Nextcloud bulk upload, chunked-upload assembly) ask
``authorize_write``: a PUT's decision plus the owner's tree and path the file lands at. A
request below ``uploads/<caller>/`` that names a ``Destination`` (every request of a chunked
upload does) is decided as a PUT of that destination.

A calendar or address book shared with the caller is served in the caller's own home
(``<uri>_shared_by_<owner>``, an own path), where the providers ask ``authz.collections``.

**COPY/MOVE between two trees** (into, out of or between shares, as a Nextcloud client does
when a file is moved into a shared folder) is decided side by side: the source questions in the
source owner's tree, the destination questions in the destination owner's tree; the verdict
carries a view for each side that is a mount and the provider copies the rows across
(``oxidav.tree.transfers``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from oxidav.authz.grants.decision import ALLOW, Decision
from oxidav.authz.grants.engine import RequestAuthz
from oxidav.authz.grants.mounts import Mount, MountTable
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.authz.grants.views import TreeView
from oxidav.authz.http_actions import On, questions
from oxidav.db.models.authz import Grant
from oxidav.db.models.users import User
from oxidav.tree import InvalidName, NodeInfo, normalize_path, resolve
from oxidav.urls import FILES, LEGACY_WEBDAV, UPLOADS, owner_of_path

__all__ = [
    "ALLOW",
    "Decision",
    "Verdict",
    "WritePlace",
    "authorize",
    "authorize_write",
    "decide",
]


def decide(username: str, path: str, destination: str | None = None) -> Decision:
    """The ownership rule alone: may ``username`` act on ``path`` (and ``destination``)?"""
    for target, what in ((path, "path"), (destination, "destination")):
        if target is None:
            continue
        owner = owner_of_path(target)
        if owner is not None and owner != username:
            return Decision(False, 404, f"{what} belongs to another user")
    return ALLOW


@dataclass(frozen=True, slots=True)
class Verdict:
    """A request's answer: the decision, whose tree it acts in, whether the engine audited."""

    decision: Decision
    #: True when the engine already wrote the audit line of this denial.
    audited: bool = False
    #: The mounts (shares in the caller's tree) the request goes through, for the provider.
    views: tuple[TreeView, ...] = ()
    #: DELETE of a mount point: the caller's own grant to revoke instead (Nextcloud's unshare).
    unshare: int | None = None
    #: MOVE of a mount point within the share folder: the mount and its new name, stored for
    #: the caller alone instead of moving anything (Nextcloud's rename of a ``file_target``).
    rename_mount: tuple[Mount, str] | None = None


@dataclass(frozen=True, slots=True)
class _TreePlace:
    owner: str
    tree_path: str
    #: The owner's user id, when already known (mounts).
    owner_id: int | None = None
    #: The mount the place was reached through (a path in the caller's own tree), if any.
    mount: Mount | None = None
    view: TreeView | None = None

    @property
    def at_mount_point(self) -> bool:
        return self.mount is not None and self.tree_path == self.mount.node.path


def _files_place(
    path: str, username: str = "", mounts: MountTable | None = None
) -> _TreePlace | None:
    """``/remote.php/dav/files/<owner>/<rest>`` (or the caller's ``/remote.php/webdav/<rest>``)
    -> (owner, normalized rest), mapped into the owner's tree when below one of the caller's
    mounts; None if it is not a file tree path."""
    if path.startswith(FILES + "/"):
        owner, _, rest = path[len(FILES) + 1 :].partition("/")
        if not owner:
            return None
        prefix = f"{FILES}/{owner}"
    elif username and (path == LEGACY_WEBDAV or path.startswith(LEGACY_WEBDAV + "/")):
        owner, rest, prefix = username, path[len(LEGACY_WEBDAV) :], LEGACY_WEBDAV
    else:
        return None
    try:
        tree_path = normalize_path(rest)
    except InvalidName:
        return None
    if owner == username and mounts is not None:
        mounted = _mounted(prefix, rest, tree_path, mounts)
        if mounted is not None:
            return mounted
    return _TreePlace(owner, tree_path)


def _mounted(prefix: str, rest: str, tree_path: str, table: MountTable) -> _TreePlace | None:
    """The owner's place of a path below one of the caller's mount points."""
    if not tree_path.startswith(table.folder + "/"):
        return None
    name, _, below = tree_path[len(table.folder) + 1 :].partition("/")
    mount = table.get(name)
    if mount is None:
        return None
    # The mount point's URL as the client spelled it (the provider matches it textually).
    depth = len([p for p in table.folder.split("/") if p]) + 1
    url_root = prefix + "/" + "/".join([s for s in rest.split("/") if s][:depth])
    node = mount.node
    view = TreeView(mount.owner, node.user_id, url_root, node.path)
    owner_path = node.path + ("/" + below if below else "")
    return _TreePlace(mount.owner, owner_path, node.user_id, mount, view)


def _parent_path(tree_path: str) -> str | None:
    return tree_path.rsplit("/", 1)[0] if tree_path else None


def authorize(
    authz: RequestAuthz,
    session: Session,
    method: str,
    path: str,
    destination: str | None = None,
    depth: str = "infinity",
    mounts: MountTable | None = None,
) -> Verdict:
    """May the request's principal do ``method`` on ``path`` (and ``destination``)?

    ``authz`` is the request's engine context; ``session`` a read session for resolving nodes;
    ``mounts`` the caller's mount table (None: paths in the caller's tree are all their own).
    """
    username = authz.principal.username
    target = _files_place(path, username, mounts)
    dest = _files_place(destination, username, mounts) if destination is not None else None
    for raw, place in ((path, target), (destination, dest)):
        owner = owner_of_path(raw) if raw is not None else None
        if owner not in (None, username) and place is None:
            return Verdict(Decision(False, 404, "belongs to another user"))
        if place is not None and place.owner != username and place.mount is None:
            return Verdict(Decision(False, 404, "another user's home"))
    if all(place is None or place.owner == username for place in (target, dest)):
        return Verdict(ALLOW)  # the fast path: nothing of anyone else's is touched
    views = tuple(p.view for p in (target, dest) if p is not None and p.view is not None)
    if target is None:
        if dest is not None and path.startswith(UPLOADS + "/"):
            # Chunked upload: each request of a session names the file it will become; decide
            # that write here, the uploads code places it by ``authorize_write``.
            written = authorize(authz, session, "PUT", destination or "", mounts=mounts)
            return written if not written.decision.allowed else Verdict(ALLOW)
        return Verdict(Decision(False, 404, "not a file tree path"))
    refused = _mount_point_rules(session, authz, method.upper(), target, dest, mounts)
    if refused is not None:
        return refused
    owner_id = target.owner_id
    if owner_id is None:
        owner_id = session.scalar(select(User.id).where(User.username == target.owner))
    if owner_id is None:
        return Verdict(Decision(False, 404, "no such user"))
    nodes = _Nodes(session, int(owner_id))
    node = nodes.at(target.tree_path)
    if destination is not None and dest is None:
        return Verdict(Decision(False, 403, "the destination is not a file tree path"))
    cross_tree = dest is not None and dest.owner != target.owner
    dest_nodes = nodes
    if dest is not None and cross_tree:
        dest_owner_id = dest.owner_id
        if dest_owner_id is None:
            dest_owner_id = session.scalar(select(User.id).where(User.username == dest.owner))
        if dest_owner_id is None:
            return Verdict(Decision(False, 404, "no such user"))
        dest_nodes = _Nodes(session, int(dest_owner_id))
    dest_node = dest_nodes.at(dest.tree_path) if dest is not None else None
    same_folder = (
        dest is not None
        and not cross_tree
        and _parent_path(dest.tree_path) == _parent_path(target.tree_path)
    )
    asked = questions(
        method,
        target_exists=node is not None,
        depth=depth,
        destination_exists=dest_node is not None,
        same_folder=same_folder,
    )
    for question in asked:
        if question.on in (On.TARGET, On.TARGET_PARENT):
            tree_path: str | None = target.tree_path
            side = nodes
        else:
            tree_path = dest.tree_path if dest is not None else None
            side = dest_nodes
        if tree_path is not None and question.on in (On.TARGET_PARENT, On.DESTINATION_PARENT):
            tree_path = _parent_path(tree_path)
        found = side.at(tree_path) if tree_path is not None else None
        if found is None:
            if tree_path and question.on in (On.TARGET_PARENT, On.DESTINATION_PARENT):
                return Verdict(_missing_parent(authz, side, tree_path))
            return Verdict(Decision(False, 404, f"no resource for {question.on.value}"))
        decision = authz.check(question.action, Resource.node(found))
        if not decision.allowed:
            return Verdict(decision, audited=True)
    # Every side in another user's tree is a mount: the provider maps it by its view (a side
    # in the caller's own tree is served as always).
    return Verdict(ALLOW, views=views)


@dataclass(frozen=True, slots=True)
class WritePlace:
    """Where a file written at a caller's files URL lands (``authorize_write``)."""

    verdict: Verdict
    #: The owner of the tree that receives the file, their id and the file's path there.
    owner: str = ""
    owner_id: int = 0
    tree_path: str = ""


def authorize_write(
    authz: RequestAuthz, session: Session, path: str, mounts: MountTable | None = None
) -> WritePlace:
    """May the principal create or overwrite the file at files URL ``path``, and where does it
    land? For writers that bypass the files provider (Nextcloud bulk and chunked uploads).

    Decided exactly like a PUT of ``path``; the place is in the owner's tree: the mount's
    owner for a path below one of the caller's ``mounts``, the URL's user otherwise.
    """
    verdict = authorize(authz, session, "PUT", path, mounts=mounts)
    if not verdict.decision.allowed:
        return WritePlace(verdict)
    username = authz.principal.username
    place = _files_place(path, username, mounts)
    if place is None or not place.tree_path:
        return WritePlace(Verdict(Decision(False, 400, "not a file below files/<user>/")))
    owner_id = place.owner_id
    if owner_id is None and place.owner == username:
        owner_id = authz.principal.user_id
    elif owner_id is None:
        owner_id = session.scalar(select(User.id).where(User.username == place.owner))
    if owner_id is None:
        return WritePlace(Verdict(Decision(False, 404, "no such user")))
    return WritePlace(verdict, place.owner, int(owner_id), place.tree_path)


def _mount_point_rules(
    session: Session,
    authz: RequestAuthz,
    method: str,
    target: _TreePlace,
    dest: _TreePlace | None,
    mounts: MountTable | None,
) -> Verdict | None:
    """What a recipient may do to a mount point itself (not to what is inside it).

    DELETE removes the share for the caller, as in Nextcloud, when it is their own grant (a
    share with a group cannot be left by one member: 403). MOVE to a free name in the share
    folder renames the mount for the caller alone (``_rename_rule``). A mount point cannot be
    moved elsewhere or overwritten: 403; MKCOL of it is 405 (it exists, RFC 4918 §9.3.1).
    """
    if target.at_mount_point and method == "DELETE":
        assert target.mount is not None
        me = authz.principal.user_id
        grant_id = session.scalar(
            select(Grant.id).where(
                Grant.subject_user_id == me,
                Grant.resource_kind.in_([ResourceKind.FOLDER.value, ResourceKind.FILE.value]),
                Grant.resource_id == target.mount.node.id,
            )
        )
        if grant_id is None:
            why = "a share with a group cannot be removed by one member"
            return Verdict(Decision(False, 403, why))
        return Verdict(ALLOW, unshare=int(grant_id))
    if target.at_mount_point and method == "MOVE":
        return _rename_rule(session, authz, target, dest, mounts)
    if target.at_mount_point and method in ("MKCOL", "MKCALENDAR"):
        # The caller's own node cannot take a mount's name: the path names the mount.
        return Verdict(Decision(False, 405, "a mount point exists at this name"))
    if dest is not None and dest.at_mount_point and method in ("MOVE", "COPY"):
        return Verdict(Decision(False, 403, "a mount point cannot be overwritten"))
    return None


def _rename_rule(
    session: Session,
    authz: RequestAuthz,
    target: _TreePlace,
    dest: _TreePlace | None,
    mounts: MountTable | None,
) -> Verdict:
    """MOVE of a mount point: a rename for the caller alone when the destination is a free
    name in their share folder; 403 otherwise (another folder, another mount, or a name one of
    their own files or folders holds: a mount never replaces anything)."""
    assert target.mount is not None
    me = authz.principal
    if dest is not None and dest.at_mount_point:
        return Verdict(Decision(False, 403, "a mount point cannot be overwritten"))
    if dest is None or mounts is None or dest.owner != me.username or dest.mount is not None:
        return Verdict(Decision(False, 403, "a mount point can only be renamed in its folder"))
    folder, _, name = dest.tree_path.rpartition("/")
    if folder != mounts.folder or not name:
        return Verdict(Decision(False, 403, "a mount point can only be renamed in its folder"))
    if resolve(session, me.user_id, dest.tree_path) is not None:
        return Verdict(Decision(False, 403, "a mount point cannot replace a file or folder"))
    return Verdict(ALLOW, rename_mount=(target.mount, name))


def _missing_parent(authz: RequestAuthz, nodes: _Nodes, folder_path: str) -> Decision:
    """A new member's folder does not exist: 409 Conflict (RFC 4918 §9.3.1, §9.8.5) when the
    caller can see the nearest folder that does, else 404 (nothing there is theirs to see)."""
    ancestor = _parent_path(folder_path)
    while ancestor is not None:
        found = nodes.at(ancestor)
        if found is not None:
            if authz.bits(Resource.node(found)):
                return Decision(False, 409, "the parent folder does not exist")
            break
        ancestor = _parent_path(ancestor)
    return Decision(False, 404, "no resource for the parent folder")


class _Nodes:
    """Live nodes of one owner's tree by path, each resolved once per request."""

    def __init__(self, session: Session, owner_id: int) -> None:
        self.session = session
        self.owner_id = owner_id
        self._seen: dict[str, NodeInfo | None] = {}

    def at(self, tree_path: str) -> NodeInfo | None:
        if tree_path not in self._seen:
            self._seen[tree_path] = resolve(self.session, self.owner_id, tree_path)
        return self._seen[tree_path]

"""Who may touch which path: the single place where a request's access decision is made.

**Own paths** (the user-scoped collections that carry the caller's own name, and every path
that is not user-scoped) are allowed at once: no grant query is made.

**Another user's file tree** (``/remote.php/dav/files/<owner>/…``) is decided by the grant
engine: the request target (and, for COPY/MOVE, the ``Destination``) is resolved to a tree node
through the tree's read API, and every question that ``http_actions.questions`` lists for the
method is put to the engine. A denial carries the engine's status: 404 when the caller holds no
role there (a 403 would reveal that the resource exists), 403 when they can already see it.
A resource that does not exist answers 404 as well.

**Everything else that belongs to another user** — calendars, address books, uploads,
trashbin — answers 404: grants on calendars and address books are recorded but not yet served
over HTTP. COPY/MOVE between two different users' trees is refused: the provider works inside
one tree per request (403 when the caller can see the destination's folder, else 404).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from oxidav.authz.decision import ALLOW, Decision
from oxidav.authz.engine import RequestAuthz
from oxidav.authz.http_actions import On, questions
from oxidav.authz.resources import Resource
from oxidav.db.models.users import User
from oxidav.providers.urls import FILES, owner_of_path
from oxidav.tree import InvalidName, NodeInfo, normalize_path, resolve

__all__ = ["ALLOW", "Decision", "Verdict", "authorize", "decide", "destination_path"]


def destination_path(destination: str) -> str:
    """The decoded path of a ``Destination`` header (absolute URL or absolute path)."""
    return unquote(urlsplit(destination).path)


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
    #: The owner of the file tree the request acts in, when it is not the caller's own.
    acting_owner: str | None = None
    #: True when the engine already wrote the audit line of this denial.
    audited: bool = False


@dataclass(frozen=True, slots=True)
class _TreePlace:
    owner: str
    tree_path: str


def _files_place(path: str) -> _TreePlace | None:
    """``/remote.php/dav/files/<owner>/<rest>`` -> (owner, normalized rest); else None."""
    if not path.startswith(FILES + "/"):
        return None
    owner, _, rest = path[len(FILES) + 1 :].partition("/")
    if not owner:
        return None
    try:
        return _TreePlace(owner, normalize_path(rest))
    except InvalidName:
        return None


def _parent_path(tree_path: str) -> str | None:
    return tree_path.rsplit("/", 1)[0] if tree_path else None


def authorize(
    authz: RequestAuthz,
    session: Session,
    method: str,
    path: str,
    destination: str | None = None,
    depth: str = "infinity",
) -> Verdict:
    """May the request's principal do ``method`` on ``path`` (and ``destination``)?

    ``authz`` is the request's engine context; ``session`` a read session for resolving nodes.
    """
    username = authz.principal.username
    owners = {owner_of_path(p) for p in (path, destination) if p is not None}
    if all(owner in (None, username) for owner in owners):
        return Verdict(ALLOW)  # the fast path: nothing of anyone else's is touched
    target = _files_place(path)
    dest = _files_place(destination) if destination is not None else None
    for raw, place in ((path, target), (destination, dest)):
        owner = owner_of_path(raw) if raw is not None else None
        if owner not in (None, username) and place is None:
            return Verdict(Decision(False, 404, "belongs to another user"))
    if target is None:
        return Verdict(Decision(False, 404, "not a file tree path"))
    owner_id = session.scalar(select(User.id).where(User.username == target.owner))
    if owner_id is None:
        return Verdict(Decision(False, 404, "no such user"))
    nodes = _Nodes(session, int(owner_id))
    node = nodes.at(target.tree_path)
    dest_node = nodes.at(dest.tree_path) if dest is not None else None
    asked = questions(
        method,
        target_exists=node is not None,
        depth=depth,
        destination_exists=dest_node is not None,
    )
    cross_tree = destination is not None and (dest is None or dest.owner != target.owner)
    for question in asked:
        if cross_tree and question.on in (On.DESTINATION, On.DESTINATION_PARENT):
            continue  # refused below, once the source side has been judged
        if question.on in (On.TARGET, On.TARGET_PARENT):
            tree_path: str | None = target.tree_path
        else:
            tree_path = dest.tree_path if dest is not None else None
        if tree_path is not None and question.on in (On.TARGET_PARENT, On.DESTINATION_PARENT):
            tree_path = _parent_path(tree_path)
        found = nodes.at(tree_path) if tree_path is not None else None
        if found is None:
            return Verdict(Decision(False, 404, f"no resource for {question.on.value}"))
        decision = authz.check(question.action, Resource.node(found))
        if not decision.allowed:
            return Verdict(decision, audited=True)
    if cross_tree:
        if dest is not None and dest.owner != username and not _sees(authz, session, dest):
            return Verdict(Decision(False, 404, "destination belongs to another user"))
        return Verdict(Decision(False, 403, "copy/move between two users' trees"))
    return Verdict(ALLOW, acting_owner=target.owner)


def _sees(authz: RequestAuthz, session: Session, place: _TreePlace) -> bool:
    """Whether the principal holds any role on the folder that would receive ``place``."""
    owner_id = session.scalar(select(User.id).where(User.username == place.owner))
    folder_path = _parent_path(place.tree_path)
    if owner_id is None or folder_path is None:
        return False
    folder = resolve(session, int(owner_id), folder_path)
    return folder is not None and authz.role(Resource.node(folder)) is not None


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

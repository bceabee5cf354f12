"""Shared calendars and address books: which ones a principal reaches, and what it may do there.

A grant on a calendar or an address book (``ResourceKind.CALENDAR`` / ``ADDRESSBOOK``) reaches
the collection and every object in it. Objects have no grants of their own, so every action on
an object — reading it, replacing it (``WRITE``), adding one (``CREATE``), deleting one
(``DELETE``) — is judged on the bits held on its collection, by ``roles.ACTION_BITS``: read
reads, update replaces, create adds, delete deletes. Expired grants allow nothing. The owner of a
collection is never "reached" through a share: their own home serves it.

**Cost.** ``CollectionAccess`` lives for one request, over the engine's ``RequestAuthz``: the
first question reads the grants generation and, unless the engine has them cached for that
generation, the principal's grants (one query, groups resolved in it). Every later question —
the list of all shared collections of a home, a role, a write check — is answered from memory.
A revocation bumps the generation, so the very next request no longer reaches the collection.

**Declining.** A recipient may drop a share from their own home (``decline``; DELETE of the
shared collection, as in Nextcloud): their own user grants on it are revoked. A collection that
still reaches them through a group cannot be declined alone: 403, and nothing changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants import lookup
from oxidav.authz.grants import store as grants
from oxidav.authz.grants.audit import log_denial
from oxidav.authz.grants.decision import Decision
from oxidav.authz.grants.engine import GrantEngine, RequestAuthz
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.authz.grants.roles import Action, allows
from oxidav.authz.grants.store import Subject
from oxidav.db import Database
from oxidav.environ import ENVIRON_COLLECTIONS, principal_of

COLLECTION_KINDS = (ResourceKind.CALENDAR, ResourceKind.ADDRESSBOOK)


@dataclass(frozen=True, slots=True)
class Reach:
    """A collection of another user that the principal reaches, and the bits they hold."""

    resource: Resource
    permissions: int

    def may(self, action: Action) -> bool:
        """Whether the bits allow ``action`` on the collection's objects."""
        return allows(self.permissions, action)

    @property
    def writable(self) -> bool:
        """May objects be added, replaced and deleted (update, create and delete held)?"""
        return all(self.may(a) for a in (Action.WRITE, Action.CREATE, Action.DELETE))


class _StillReached(Exception):
    """Rolls a decline back: a group grant still reaches the collection."""


class CollectionAccess:
    """One request's questions about shared calendars and address books."""

    def __init__(self, authz: RequestAuthz, db: Database) -> None:
        self.authz = authz
        self.db = db
        self._refused: set[Resource] = set()

    @property
    def principal(self) -> Principal:
        return self.authz.principal

    def reachable(self, kind: ResourceKind) -> list[Reach]:
        """Every collection of ``kind`` of another user that the principal reaches (by id).

        Answered from the principal's grant set: no query beyond the engine's."""
        if kind not in COLLECTION_KINDS:
            raise ValueError(f"{kind.value} is not a calendar or address-book kind")
        me = self.principal.user_id
        held = self.authz.grant_set().held
        reached = (
            Reach(resource, self.authz.granted(resource))
            for resource in (
                Resource(kind, resource_id, found.owner_id)
                for (granted_kind, resource_id), found in held.items()
                if granted_kind is kind and found.owner_id != me
            )
        )
        return sorted(
            (reach for reach in reached if reach.permissions), key=lambda r: r.resource.id
        )

    def reach(self, resource: Resource) -> Reach | None:
        """The principal's reach of another user's collection (None: no unexpired grant, or
        it is their own)."""
        if resource.kind not in COLLECTION_KINDS or resource.owner_id == self.principal.user_id:
            return None
        bits = self.authz.bits(resource)
        return Reach(resource, bits) if bits else None

    def visible(self, resource: Resource) -> Reach | None:
        """``reach`` for a request that names the collection: when no grant reaches it, the
        request is denied (it must look absent, 404), audited once per request."""
        reach = self.reach(resource)
        if reach is None and resource not in self._refused:
            self._refused.add(resource)
            decision = Decision(False, 404, "no grant reaches this collection")
            log_denial(self.principal, Action.READ, resource, decision)
        return reach

    def check_member(self, action: Action, resource: Resource) -> Decision:
        """May the principal do ``action`` on an object of the shared collection ``resource``?

        404 when no grant reaches the collection (it must look absent), 403 when the role does
        not allow the action. Denials are audited."""
        reach = self.reach(resource)
        if reach is not None and reach.may(action):
            return Decision(True, permissions=reach.permissions)
        if reach is None:
            decision = Decision(False, 404, "no grant reaches this collection")
        else:
            decision = Decision(
                False,
                403,
                f"permissions {reach.permissions} do not allow {action.value}",
                reach.permissions,
            )
        log_denial(self.principal, action, resource, decision)
        return decision

    def decline(self, resource: Resource) -> Decision:
        """Remove a shared collection from the principal's home: revoke their own grants on
        it, in one transaction; refused (403, nothing changed) while a group grant still
        reaches it, 404 if nothing reaches it."""
        me = self.principal.user_id
        if self.reach(resource) is None:
            decision = Decision(False, 404, "no grant reaches this collection")
            log_denial(self.principal, Action.DELETE, resource, decision)
            return decision
        try:
            with self.db.write() as session:
                own = grants.list_grants(session, resource=resource, subject=Subject.user(me))
                for info in own:
                    grants.revoke(session, info.id)
                now = self.authz.engine.now()
                if any(
                    row.kind is resource.kind and row.resource_id == resource.id
                    for row in lookup.principal_grants(session, me, now)
                ):
                    raise _StillReached
        except _StillReached:
            decision = Decision(
                False, 403, "shared through a group: only the owner can remove it", None
            )
            log_denial(self.principal, Action.DELETE, resource, decision)
            return decision
        return Decision(True)


class SharedCollections:
    """The process-wide part: a grant engine (its caches shared by the requests)."""

    def __init__(self, db: Database, engine: GrantEngine | None = None) -> None:
        self.db = db
        self.engine = engine or GrantEngine(db)

    def forget(self, resource: Resource) -> None:
        """Revoke every grant on a collection about to be deleted (call it first: a later
        collection that reuses the id must not inherit them)."""
        with self.db.write() as session:
            grants.revoke_resources(session, resource.kind, [resource.id])

    def for_request(self, environ: dict[str, Any]) -> CollectionAccess | None:
        """The request's ``CollectionAccess`` (made once per request); None when nobody is
        authenticated (nothing is shared with an anonymous request)."""
        access = environ.get(ENVIRON_COLLECTIONS)
        if isinstance(access, CollectionAccess):
            return access
        principal = _principal(environ)
        if principal is None:
            return None
        access = CollectionAccess(self.engine.request(principal), self.db)
        environ[ENVIRON_COLLECTIONS] = access
        return access


def _principal(environ: Mapping[str, Any]) -> Principal | None:
    principal = principal_of(environ)
    return principal if isinstance(principal, Principal) else None

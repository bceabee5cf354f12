"""The grant engine: ``check`` one resource, ``filter`` a listing
(docs/architecture.md#request-path: authz lives here).

**Rules.** The owner of a resource may do everything. Anyone else holds the permission bits of
the unexpired grants that reach the resource — grants to them or to any group they belong to
(nesting resolved), added up — and may do what ``roles.ACTION_BITS`` allows those bits. A grant
on a folder reaches the folder and everything below it; a grant on a file reaches that file
only. ``DELETE`` and ``MOVE_OUT`` are judged on the bits inherited from the resource's folder
(``roles.MEMBERSHIP_ACTIONS``). A denial answers 404 when the principal holds no bit at all on
the resource (a 403 would reveal that it exists) and 403 when they can already see it.

**Reshares.** A grant made by a user other than the owner (a reshare) is worth its bits and'ed
with what its maker holds on the same resource *now*, and nothing once the maker lacks the
share bit there: the maker's own grants are asked through a ``RequestAuthz`` of the maker (the
same caches; a chain of reshares is followed, a cycle counts for nothing). So revoking,
reducing or expiring a grant reduces or removes every reshare made through it on the next
request, whatever the reshare's rows say.

**Cost.** A ``RequestAuthz`` lives for one request. The first question reads the grants
generation (one primary-key read) and, unless cached for that generation, the principal's
grants (one query, groups resolved in it). A node's folder role is computed once per folder
from the folder's ancestor chain (one query, for every folder of a ``filter`` call at once) and
shared by all its children; resources of owners from whom the principal holds no folder grant
need no chain at all. A listing of N children therefore costs at most three queries, whatever
N is, and a warm one (caches filled by an earlier request) costs only the generation read. A
reshare adds its maker's reads (their grant set, and the chain of a folder below their share),
once per maker and folder per request, cached across requests alike.

**Caches across requests** (bounded, ``ttl`` seconds):

- a principal's grant set, tagged with the generation it was read under and its earliest
  expiry. It is used only while the generation is unchanged and the expiry has not passed.
  Every grant or membership change bumps the generation in its own transaction, and a request
  reads the generation *before* the grant rows, so a revocation committed before a request
  starts is always seen by it: no cached grant outlives its revocation;
- a folder's ancestor chain (node ids at its ancestor paths), keyed by folder id *and*
  materialized path, so a MOVE of the folder or of any ancestor (which rewrites the path) never
  hits a stale entry. It holds no grant and so never decides alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from oxidav.authz.authn.cache import TTLCache
from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants import generation, lookup
from oxidav.authz.grants.audit import log_denial
from oxidav.authz.grants.decision import Decision
from oxidav.authz.grants.grantset import GrantSet, Held, earlier, later
from oxidav.authz.grants.lookup import FolderRef
from oxidav.authz.grants.resources import Resource, ResourceKind, ancestor_paths
from oxidav.authz.grants.roles import ALL, MEMBERSHIP_ACTIONS, Action, Permission, allows
from oxidav.db import Database, utcnow

#: Folders whose chains one statement reads at most (bounds the statement's size).
CHAIN_BATCH = 200
#: How many makers a chain of reshares is followed through at most.
MAX_RESHARE_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Access:
    """What some grants give on one resource: bits, and until when the share bit lasts."""

    bits: int = 0
    #: The latest end of the grants that give the share bit (None: never ends, or no share
    #: bit: see ``bits``).
    share_until: datetime | None = None

    def join(self, other: Access) -> Access:
        if not other.bits:
            return self
        if not self.bits:
            return other
        mine = bool(self.bits & Permission.SHARE)
        theirs = bool(other.bits & Permission.SHARE)
        if mine and theirs:
            until = later(self.share_until, other.share_until)
        else:
            until = self.share_until if mine else other.share_until
        return Access(self.bits | other.bits, until)


NOTHING = Access()


class GrantEngine:
    """The process-wide part: the database and the caches shared between requests."""

    def __init__(
        self,
        db: Database,
        *,
        ttl: float = 30.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = utcnow,
    ) -> None:
        self.db = db
        self.now = now
        self.grant_sets: TTLCache[int, tuple[int, GrantSet]] = TTLCache(ttl, max_entries, clock)
        self.chains: TTLCache[FolderRef, tuple[int, ...]] = TTLCache(ttl, max_entries, clock)

    def request(self, principal: Principal, session: Session | None = None) -> RequestAuthz:
        """A context for one request of ``principal`` (reads through ``session`` if given)."""
        return RequestAuthz(self, principal, session)

    def check(self, principal: Principal, action: Action, resource: Resource) -> Decision:
        """May ``principal`` do ``action`` on ``resource``? (A one-question request.)"""
        return self.request(principal).check(action, resource)

    def filter(
        self, principal: Principal, action: Action, resources: Iterable[Resource]
    ) -> list[Decision]:
        """``check`` for many resources at a bounded number of queries, in order."""
        return self.request(principal).filter(action, resources)

    def forget(self) -> None:
        """Drop every cached entry (tests, benchmarks)."""
        self.grant_sets.clear()
        self.chains.clear()


class RequestAuthz:
    """One request's authorization context: memoises the grant set and folder bits.

    Not thread-safe; a request is served by one thread.
    """

    def __init__(
        self,
        engine: GrantEngine,
        principal: Principal,
        session: Session | None = None,
        visiting: frozenset[int] = frozenset(),
    ) -> None:
        self.engine = engine
        self.principal = principal
        self._session_given = session
        #: Makers whose grants are being asked further up a chain of reshares.
        self._visiting = visiting | {principal.user_id}
        self._grants: GrantSet | None = None
        self._chains: dict[FolderRef, tuple[int, ...]] = {}
        self._folder_access: dict[FolderRef, Access] = {}
        self._direct: dict[Resource, Access] = {}
        self._makers: dict[int, RequestAuthz | None] = {}

    # -- the questions -----------------------------------------------------------------------

    def check(self, action: Action, resource: Resource) -> Decision:
        """May the principal do ``action`` on ``resource``? Denials are audited."""
        decision = self._decide(action, resource)
        if not decision.allowed:
            log_denial(self.principal, action, resource, decision)
        return decision

    def filter(self, action: Action, resources: Iterable[Resource]) -> list[Decision]:
        """``check`` for each resource (in order), the ancestor chains read in one go."""
        items = list(resources)
        self._prefetch(items)
        return [self.check(action, resource) for resource in items]

    def bits(self, resource: Resource) -> int:
        """The bits the principal holds on ``resource`` (every bit for its owner; 0: none)."""
        return self.access(resource).bits

    def access(self, resource: Resource) -> Access:
        """The bits held on ``resource`` and until when the share bit lasts."""
        if resource.owner_id == self.principal.user_id:
            return Access(ALL)
        return self._accesses(resource)[1]

    def roles(self, resource: Resource) -> tuple[int, int]:
        """(bits inherited from the resource's folder, bits on the resource itself)."""
        if resource.owner_id == self.principal.user_id:
            return ALL, ALL
        inherited, effective = self._accesses(resource)
        return inherited.bits, effective.bits

    def granted(self, resource: Resource) -> int:
        """The bits of the grants made on ``resource`` itself (no cascade): a mount's."""
        if resource.owner_id == self.principal.user_id:
            return ALL
        return self._direct_access(resource).bits

    def grant_set(self) -> GrantSet:
        """The principal's unexpired grants (read once per request, cached per generation)."""
        return self._grant_set()

    # -- deciding ----------------------------------------------------------------------------

    def _decide(self, action: Action, resource: Resource) -> Decision:
        if resource.owner_id == self.principal.user_id:
            return Decision(True, permissions=ALL)
        inherited, effective = self.roles(resource)
        judged = inherited if action in MEMBERSHIP_ACTIONS else effective
        if allows(judged, action):
            return Decision(True, permissions=effective)
        if not effective:
            return Decision(False, 404, "no grant reaches this resource")
        if allows(effective, action):
            reason = f"{action.value} needs a grant on the folder of this resource"
        else:
            reason = f"permissions {effective} do not allow {action.value}"
        return Decision(False, 403, reason, effective)

    def _accesses(self, resource: Resource) -> tuple[Access, Access]:
        """(access inherited from the resource's folder, access on the resource itself)."""
        grants = self._grant_set()
        direct = self._direct_access(resource)
        ref = self._parent_ref(resource, grants)
        inherited = self._folder_access_of(ref) if ref is not None else NOTHING
        return inherited, inherited.join(direct)

    def _direct_access(self, resource: Resource) -> Access:
        """What the grants made on ``resource`` itself give, reshares weighed by their makers."""
        found = self._direct.get(resource)
        if found is not None:
            return found
        held = self._grant_set().on(resource.kind, resource.id, resource.owner_id)
        access = NOTHING if held is None else self._weigh(held, resource)
        self._direct[resource] = access
        return access

    def _weigh(self, held: Held, resource: Resource) -> Access:
        access = Access(held.bits, held.expires_at) if held.bits else NOTHING
        for reshare in held.reshares:
            maker = self._maker(reshare.maker)
            if maker is None:
                continue
            theirs = maker.access(resource)
            if not theirs.bits & Permission.SHARE:
                continue  # the maker may no longer share it: the reshare is worth nothing
            until = earlier(reshare.expires_at, theirs.share_until)
            access = access.join(Access(reshare.bits & theirs.bits, until))
        return access

    def _maker(self, user_id: int) -> RequestAuthz | None:
        """The context of a reshare's maker (None: a cycle, or a chain too long)."""
        if user_id in self._visiting or len(self._visiting) > MAX_RESHARE_DEPTH:
            return None
        if user_id not in self._makers:
            self._makers[user_id] = RequestAuthz(
                self.engine, Principal(user_id, ""), self._session_given, self._visiting
            )
        return self._makers[user_id]

    def _parent_ref(self, resource: Resource, grants: GrantSet) -> FolderRef | None:
        parent_path = resource.parent_path
        if parent_path is None or resource.parent_id is None:
            return None
        if resource.owner_id not in grants.folder_owners:
            return None  # no folder of this owner is granted: nothing can cascade
        return FolderRef(resource.owner_id, resource.parent_id, parent_path)

    def _folder_access_of(self, ref: FolderRef) -> Access:
        """What a folder's grants and its ancestors' grants give: once per folder."""
        if ref not in self._folder_access:
            self._load_chains([ref])
            chain = self._chains[ref]
            access = NOTHING
            parent: int | None = None
            for node_id, path in zip(chain, ancestor_paths(ref.path), strict=False):
                folder = Resource(ResourceKind.FOLDER, node_id, ref.owner_id, parent, path)
                access = access.join(self._direct_access(folder))
                parent = node_id
            self._folder_access[ref] = access
        return self._folder_access[ref]

    # -- loading -----------------------------------------------------------------------------

    @contextmanager
    def _session(self) -> Iterator[Session]:
        if self._session_given is not None:
            yield self._session_given
        else:
            with self.engine.db.read() as session:
                yield session

    def _grant_set(self) -> GrantSet:
        if self._grants is None:
            user_id = self.principal.user_id
            with self._session() as session:
                # The generation first: grant rows read after it are at least as new, so a
                # set cached under this generation never predates a revocation it counts.
                current = generation.current(session)
                now = self.engine.now()
                cached = self.engine.grant_sets.get(user_id)
                if cached is not None and cached[0] == current and cached[1].is_valid_at(now):
                    self._grants = cached[1]
                else:
                    self._grants = GrantSet.from_rows(
                        lookup.principal_grants(session, user_id, now)
                    )
                    self.engine.grant_sets.put(user_id, (current, self._grants))
        return self._grants

    def _prefetch(self, resources: Sequence[Resource]) -> None:
        if all(r.owner_id == self.principal.user_id for r in resources):
            return
        grants = self._grant_set()
        refs = {self._parent_ref(r, grants) for r in resources}
        self._load_chains([ref for ref in refs if ref is not None])

    def _load_chains(self, refs: Sequence[FolderRef]) -> None:
        missing: list[FolderRef] = []
        for ref in refs:
            if ref in self._chains:
                continue
            cached = self.engine.chains.get(ref)
            if cached is not None:
                self._chains[ref] = cached
            else:
                missing.append(ref)
        for start in range(0, len(missing), CHAIN_BATCH):
            with self._session() as session:
                found = lookup.folder_chains(session, missing[start : start + CHAIN_BATCH])
            for ref, chain in found.items():
                self._chains[ref] = chain
                if chain:
                    self.engine.chains.put(ref, chain)

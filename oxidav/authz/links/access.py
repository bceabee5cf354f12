"""Who may use a public link, and for what: the decisions behind ``/s/<token>`` and
``/public.php/webdav``.

``LinkGate.open`` turns a token (plus a password or a link cookie) into a ``LiveLink``:

- the link row is read on every request (``links.find_live``, one indexed query): a deleted or
  expired link, or one whose node is gone or trashed, is 404 on the very next request. A link
  made by someone other than the owner (a reshare) is live only while its maker holds the
  share bit and the link's bits on the node (the grant engine, asked on every request);
- a password is checked with argon2, in a slot of the process's ``HashingGate`` (the one user
  logins use: 429 with Retry-After when none frees in time). A verified password is remembered
  (keyed digest, short TTL) under the link id *and its current password hash*, so changing or
  removing the password — or deleting the link — invalidates it at once;
- failed passwords are throttled per token + client address (``LoginThrottle``, the class the
  user logins use): past the limit every password — the right one too — gets 429 with
  Retry-After until the window has passed. A password not remembered also takes a place in the
  client address's ``AddressBudget`` (shared with user logins) before it is hashed: past that
  budget, 429 without hashing;
- a link cookie (``cookie_value``) is an HMAC over the token and an expiry time, keyed by the
  link's current password hash: it needs no server state (any process can check it) and dies
  with the password it was issued under.

``decide`` says whether a method may run on a path below the link, by mode; ``view`` maps the
link onto its owner's tree (``TreeView``) so the files provider serves it. Every denial writes
one audit line on ``oxidav.audit``.

A file drop (``LinkMode.UPLOAD``, Nextcloud's permissions 4) never tells what its folder holds:
every decision is taken on the method, the depth and whether the path is the link's root —
never on what exists. A PUT is admitted and lands under a free name (``TreeView.drop``,
``oxidav.tree.drops``: ``a.txt`` again becomes ``a (2).txt``, answered 201 like any new
file); a MKCOL is answered 201 and makes nothing (``drop_mkcol``: folders come with the files
put into them, as Nextcloud's ``FilesDropPlugin`` pretends every folder exists); OPTIONS and a
depth-0 PROPFIND of the link's own folder (always there; the files provider shows it with size
0, its creation time and a fixed etag, so nothing in it moves with what it holds) are admitted;
every other request — those two below the root, GET, HEAD, deeper PROPFINDs, DELETE, MOVE,
COPY, LOCK, PROPPATCH — is 403 on any path.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from oxidav.authz.authn.credential_cache import CredentialCache
from oxidav.authz.authn.failures import DatabaseFailures
from oxidav.authz.authn.hashing_gate import HashingGate
from oxidav.authz.authn.login_refusals import HashingBusy
from oxidav.authz.authn.principal import Principal
from oxidav.authz.authn.throttle import AddressBudget, LoginThrottle
from oxidav.authz.grants.decision import ALLOW, Decision
from oxidav.authz.grants.engine import GrantEngine
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.authz.grants.roles import Permission
from oxidav.authz.grants.views import TreeView
from oxidav.authz.links.store import LinkMode, LiveLink, find_live
from oxidav.db import Database
from oxidav.settings import Settings

audit = logging.getLogger("oxidav.audit")

#: How long a link cookie stays valid (the password is asked again after this).
COOKIE_SECONDS = 12 * 3600
READ_METHODS = frozenset({"GET", "HEAD", "PROPFIND", "OPTIONS"})
UPLOAD_METHODS = frozenset({"PUT", "MKCOL"})
EDIT_METHODS = READ_METHODS | {
    "PUT",
    "MKCOL",
    "DELETE",
    "PROPPATCH",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
}
#: Methods that change or remove what their path names (refused on the link's own root).
_ROOT_CHANGES = frozenset({"DELETE", "MOVE"})


class LinkDenied(Exception):
    """A request a link does not admit: ``status`` (401, 404, 429) and extra headers."""

    def __init__(self, status: int, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.retry_after = retry_after

    @property
    def headers(self) -> list[tuple[str, str]]:
        if self.retry_after is None:
            return []
        return [("Retry-After", str(math.ceil(self.retry_after)))]


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a request offers to open a link: a password (None: none given) and/or a cookie."""

    password: str | None = None
    cookie: str | None = None
    address: str = ""


def _label(token: str) -> str:
    """A token as audit lines show it: never whole (logs must not carry working links)."""
    return token[:4] + "…" if token else "-"


def deny_line(token: str, link_id: int | None, what: str, decision: Decision, address: str) -> None:
    """The one audit line of a denied link request."""
    audit.info(
        "deny link=%s token=%s what=%s address=%s status=%d reason=%r",
        link_id if link_id is not None else "-",
        _label(token),
        what,
        address or "-",
        decision.status,
        decision.reason,
        extra={
            "oxidav_audit": {
                "link": link_id,
                "token": _label(token),
                "what": what,
                "status": decision.status,
                "reason": decision.reason,
            }
        },
    )


class LinkGate:
    """The process-wide part of public-link access: throttle and verified-password cache;
    the hashing cap and the per-address budget are the user logins' (``Authenticator``)."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        hashing: HashingGate,
        address_budget: AddressBudget,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.engine = GrantEngine(db)
        self.throttle = LoginThrottle(
            settings.auth_max_failures, settings.auth_failure_window, DatabaseFailures(db, "link")
        )
        self.verified: CredentialCache[Principal] = CredentialCache(settings.auth_cache_seconds)
        self.hashing = hashing
        self.address_budget = address_budget
        self._clock = clock

    # -- opening a link ---------------------------------------------------------------------

    def find(self, token: str) -> LiveLink | None:
        with self.db.read() as session:
            link = find_live(session, token)
            if link is None or link.created_by in (None, link.owner_id):
                return link
            maker = self.engine.request(Principal(link.created_by, ""), session)
            kind = ResourceKind.FOLDER if link.is_folder else ResourceKind.FILE
            node = Resource(kind, link.node_id, link.owner_id, link.node_parent_id, link.node_path)
            held = maker.bits(node)
            wanted = link.mode.permissions | Permission.SHARE
            return link if held & wanted == wanted else None

    def open(self, token: str, credentials: Credentials, what: str = "open") -> LiveLink:
        """The live link of ``token`` if ``credentials`` open it; else ``LinkDenied``."""
        address = credentials.address
        link = self.find(token)
        if link is None:
            self._deny(token, None, what, 404, "no live link for this token", address)
        if link.password_hash is None:
            return link
        if credentials.cookie is not None and self.cookie_valid(link, credentials.cookie):
            return link
        retry_after = self.throttle.retry_after(link.token, address)
        if retry_after is not None:
            self._deny(token, link.id, what, 429, "too many failed passwords", address, retry_after)
        if credentials.password is None:
            self._deny(token, link.id, what, 401, "password required", address)
        password = credentials.password
        if self._remembered(link, password) or self._verify(
            link, link.password_hash, password, what, address
        ):
            self.throttle.record_success(link.token, address)
            return link
        self.throttle.record_failure(link.token, address)
        self._deny(token, link.id, what, 401, "wrong password", address)

    @staticmethod
    def _verified_key(link: LiveLink) -> str:
        return f"{link.id}\0{link.password_hash}"

    def _remembered(self, link: LiveLink, password: str) -> bool:
        """Whether ``password`` verified lately under the link's current password hash."""
        return self.verified.get(self._verified_key(link), password) is not None

    def _verify(
        self, link: LiveLink, password_hash: str, password: str, what: str, address: str
    ) -> bool:
        """One argon2 verification against the link's ``password_hash``, within the address's
        budget and a hashing slot; a right password is remembered under that hash."""
        retry_after = self.address_budget.reserve(address)
        if retry_after is not None:
            reason = "too many failed passwords from this address"
            self._deny(link.token, link.id, what, 429, reason, address, retry_after)
        right = checked = False
        try:
            right = self.hashing.verify(password_hash, password)
            checked = True
        except HashingBusy as busy:
            status, reason = busy.status, busy.reason
            self._deny(link.token, link.id, what, status, reason, address, busy.retry_after)
        finally:
            self.address_budget.settle(address, failed=checked and not right)
        if right:
            self.verified.put(self._verified_key(link), password, Principal(link.id, link.token))
        return right

    def _deny(
        self,
        token: str,
        link_id: int | None,
        what: str,
        status: int,
        reason: str,
        address: str,
        retry_after: float | None = None,
    ) -> NoReturn:
        deny_line(token, link_id, what, Decision(False, status, reason), address)
        raise LinkDenied(status, reason, retry_after)

    # -- cookies ----------------------------------------------------------------------------

    @staticmethod
    def _cookie_mac(link: LiveLink, expires: int) -> str:
        key = hashlib.sha256(b"oxidav link cookie\0" + (link.password_hash or "").encode()).digest()
        message = f"{link.id}\0{link.token}\0{expires}".encode()
        return hmac.new(key, message, hashlib.sha256).hexdigest()

    def cookie_value(self, link: LiveLink) -> str:
        """A cookie proving the link's password was given (bound to the current hash)."""
        expires = int(self._clock()) + COOKIE_SECONDS
        return f"{expires}.{self._cookie_mac(link, expires)}"

    def cookie_valid(self, link: LiveLink, value: str) -> bool:
        if link.password_hash is None:
            return False
        stamp, _, mac = value.partition(".")
        if not stamp.isdigit() or int(stamp) <= self._clock():
            return False
        return hmac.compare_digest(mac, self._cookie_mac(link, int(stamp)))

    # -- what a request may do --------------------------------------------------------------

    def decide(
        self,
        link: LiveLink,
        method: str,
        rel_path: str,
        *,
        depth: str = "0",
        destination_inside: bool | None = None,
    ) -> Decision:
        """May ``method`` run on ``rel_path`` (below the link's root: ``""`` or ``"/a/b"``)?

        ``destination_inside``: for COPY/MOVE, whether the Destination lies below the same
        link (None: no Destination). Nothing here looks at what exists below the link.
        """
        mode = link.mode
        at_root = rel_path.strip("/") == ""
        if mode is LinkMode.READ:
            if method in READ_METHODS:
                return ALLOW
            return Decision(False, 403, "this link is read-only")
        if mode is LinkMode.UPLOAD:
            # Only the root, which is always there, is described; nothing below it.
            if at_root and (method == "OPTIONS" or (method == "PROPFIND" and depth == "0")):
                return ALLOW
            if method not in UPLOAD_METHODS:
                return Decision(False, 403, "this link is upload-only")
            return ALLOW
        if method not in EDIT_METHODS:
            return Decision(False, 403, f"{method} is not available through a link")
        if at_root and method in _ROOT_CHANGES:
            return Decision(False, 403, "the link's own folder cannot be removed or moved")
        if method in ("COPY", "MOVE") and not destination_inside:
            return Decision(False, 403, "the destination is outside the link")
        return ALLOW

    @staticmethod
    def view(link: LiveLink, url_root: str) -> TreeView:
        """The link's tree, served at ``url_root`` (a decoded path, no trailing slash); a
        file drop's view places every PUT under a free name."""
        drop = link.mode is LinkMode.UPLOAD
        return TreeView(link.owner, link.owner_id, url_root.rstrip("/"), link.node_path, drop)

    @staticmethod
    def drop_mkcol(link: LiveLink, method: str) -> bool:
        """Whether this request is a file drop's MKCOL: answered 201 without making anything,
        whatever exists (the folders come with the files put into them)."""
        return link.mode is LinkMode.UPLOAD and method == "MKCOL"

"""RFC 6578 sync tokens: URIs that name a point in one collection's change log.

A token is ``http://oxidav.org/ns/sync/<kind>-<collection id>-<epoch>/<seq>``: the collection it
belongs to, the random epoch of that collection's life, and the sequence number of the last
change it covers. Tokens are opaque to clients (RFC 6578 §4); only this module builds or reads
them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TOKEN_PREFIX = "http://oxidav.org/ns/sync/"
_TOKEN_RE = re.compile(
    r"^" + re.escape(TOKEN_PREFIX) + r"(?P<kind>[a-z]+)-(?P<cid>\d+)-(?P<epoch>[0-9a-z]+)"
    r"/(?P<seq>\d+)$"
)


class InvalidSyncToken(Exception):
    """The DAV:valid-sync-token precondition failed (RFC 6578 §3.2): the token is malformed,
    belongs to another collection, or lies outside what the change log can answer."""


@dataclass(frozen=True)
class SyncToken:
    kind: str
    collection_id: int
    epoch: str
    seq: int

    def __str__(self) -> str:
        return f"{TOKEN_PREFIX}{self.kind}-{self.collection_id}-{self.epoch}/{self.seq}"


def parse_token(text: str) -> SyncToken:
    """Read a token; raise ``InvalidSyncToken`` if it is not one of ours."""
    match = _TOKEN_RE.match(text.strip())
    if match is None:
        raise InvalidSyncToken(f"not a sync token of this server: {text!r}")
    return SyncToken(
        kind=match["kind"],
        collection_id=int(match["cid"]),
        epoch=match["epoch"],
        seq=int(match["seq"]),
    )

"""Response headers Nextcloud clients insist on
(docs/nextcloud-protocol.md#headers-and-status-codes).

After a successful PUT, MKCOL, MOVE or COPY the provider leaves the target's node row in the
environ; from it the client gets ``OC-FileId`` (hard error "Missing File ID from server"
without it), ``OC-ETag`` and ``ETag`` (hard error "Missing ETag" without one). A 207 gets
exactly ``Content-Type: application/xml; charset=utf-8`` (anything else is "PROPFIND reply is
not XML formatted"). ``X-OC-Mtime`` is applied to the node if the provider did not already,
and answered with ``X-OC-MTime: accepted``. A whole-file GET/HEAD (the files provider leaves
the node in ``oxidav.files.node``) gets ``OC-ETag`` and the stored ``OC-Checksum``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from oxidav.db import Database
from oxidav.environ import node_of
from oxidav.nextcloud.enrichers import oc_id
from oxidav.tree import set_mtime
from oxidav.tree.types import NodeInfo

WRITE_METHODS = frozenset(("PUT", "MKCOL", "MOVE", "COPY"))
MULTISTATUS_TYPE = "application/xml; charset=utf-8"

Headers = list[tuple[str, str]]


class InvalidMtime(ValueError):
    """An ``X-OC-Mtime`` that is not a number of seconds since the epoch."""


def parse_mtime(raw: str | None) -> datetime | None:
    """``X-OC-Mtime`` (integer or decimal seconds since the epoch) as an aware datetime."""
    if raw is None:
        return None
    try:
        return datetime.fromtimestamp(float(raw.strip()), UTC)
    except (ValueError, OverflowError, OSError):
        raise InvalidMtime(f"invalid X-OC-Mtime {raw[:40]!r}") from None


def written_node(environ: Mapping[str, Any]) -> NodeInfo | None:
    node = node_of(environ)
    return node if isinstance(node, NodeInfo) else None


def _has(headers: Headers, name: str) -> bool:
    lower = name.lower()
    return any(key.lower() == lower for key, _ in headers)


def _replace(headers: Headers, name: str, value: str) -> None:
    lower = name.lower()
    headers[:] = [(k, v) for k, v in headers if k.lower() != lower]
    headers.append((name, value))


def finish_headers(
    environ: Mapping[str, Any],
    status: str,
    headers: Headers,
    db: Database,
    instance_id: str,
    mtime: datetime | None,
) -> None:
    """Add the Nextcloud headers to a response about to start (in place)."""
    code = int(status[:3])
    if code == 207:
        _replace(headers, "Content-Type", MULTISTATUS_TYPE)
        return
    if code == 200 and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
        _download_headers(environ, headers)
        return
    if not (200 <= code < 300) or environ.get("REQUEST_METHOD") not in WRITE_METHODS:
        return
    node = written_node(environ)
    if node is None:
        return
    etag = f'"{node.etag}"'
    _replace(headers, "OC-FileId", oc_id(node.id, instance_id))
    _replace(headers, "OC-ETag", etag)
    if not _has(headers, "ETag"):
        headers.append(("ETag", etag))
    if mtime is not None:
        if node.mtime != mtime:
            with db.write() as session:
                set_mtime(session, node.id, mtime)
        if not _has(headers, "X-OC-MTime"):
            headers.append(("X-OC-MTime", "accepted"))


def _download_headers(environ: Mapping[str, Any], headers: Headers) -> None:
    """GET/HEAD of a file: ``OC-ETag`` and the stored ``OC-Checksum`` (the first, preferred
    one of ``oc:checksums``), which the desktop client verifies
    (docs/nextcloud-protocol.md#headers-and-status-codes)."""
    node = written_node(environ)
    if node is None or node.is_folder:
        return
    if not _has(headers, "OC-ETag"):
        headers.append(("OC-ETag", f'"{node.etag}"'))
    if node.checksums and not _has(headers, "OC-Checksum"):
        headers.append(("OC-Checksum", node.checksums.split()[0]))

"""``commit``: many folders and files in one request, each with its own answer.

Folders first (parents before children; an existing folder is fine), then files: each path is
placed by ``oxidav.authz.writes`` (a share mounted in the caller's tree lands in the owner's,
a path the caller may not write answers 403 / 404 for that file alone), refused while a
WebDAV lock covers it (423: the push client holds no lock tokens), and its content made from
inline ``data`` (ingested as a PUT body is) or from chunks the caller holds
(``holdings.held``; others answer 409 with the missing list, and the client uploads them and
commits again). Then every file is written with ``oxidav.tree.write_file`` in one transaction,
honouring ``if_match`` / ``if_none_match`` (412) and the quota (507); a file that fails leaves
the others and changes nothing. Answer: ``{"folders": {path: result}, "files": {path: result}}``
where a result is ``{"etag", "fileid", "size"}`` (folders: ``{"ok": true}``) or
``{"status": 4xx/5xx, "error": reason[, "missing": [...]]}``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import blake3

from oxidav.authz.authn.principal import Principal
from oxidav.authz.policy import WritePlace
from oxidav.authz.writes import RequestWrites
from oxidav.blobs import StoredContent
from oxidav.blobs.assembly import MissingChunksError, assemble
from oxidav.blobs.ingest import PendingContent
from oxidav.nextcloud.context import NextcloudContext
from oxidav.nextcloud.enrichers import oc_id
from oxidav.nextcloud.headers import InvalidMtime, parse_mtime
from oxidav.nextcloud.push.holdings import held, staged_after
from oxidav.nextcloud.push.protocol import FileEntry
from oxidav.storage_failures import storage_failure
from oxidav.tree import AlreadyExists, TreeError, make_folder, normalize_path, resolve, write_file
from oxidav.tree.locks import list_locks_at
from oxidav.urls import FILES

log = logging.getLogger("oxidav.nextcloud")
commits_log = logging.getLogger("oxidav.push.commits")

Result = dict[str, Any]
#: The content hash of the empty file (stored without content).
EMPTY_CONTENT_HASH = blake3.blake3(b"").hexdigest()


def _error(status: int, reason: str, **extra: Any) -> Result:
    return {"status": status, "error": reason, **extra}


@dataclass
class _Ready:
    key: str
    owner_id: int
    tree_path: str
    content: StoredContent | None
    entry: FileEntry


def _url(owner: str, tree_path: str) -> str:
    return f"{FILES}/{owner}{tree_path}"


def _lock_roots(url: str) -> list[str]:
    """``url`` and every ancestor, quoted as lock roots are (``FilesProvider.ref_url``): a lock
    on any of them covers a write of ``url``."""
    url = quote(url)
    roots = [url]
    while "/" in url.strip("/"):
        url = url.rsplit("/", 1)[0]
        roots.append(url)
    return roots


def stat_paths(
    context: NextcloudContext, writes: RequestWrites, principal: Principal, paths: list[str]
) -> dict[str, Result | None]:
    """``stat``: for each path the caller may write, its file's etag, size and content hash
    (None: no such file), else the refusal."""
    results: dict[str, Result | None] = {}
    for key in dict.fromkeys(paths):
        try:
            path = normalize_path(key)
        except TreeError as exc:
            results[key] = _error(400, str(exc))
            continue
        place = writes.place(_url(principal.username, path))
        decision = place.verdict.decision
        if not decision.allowed:
            results[key] = _error(decision.status, decision.reason)
            continue
        with context.db.read() as session:
            node = resolve(session, place.owner_id, place.tree_path)
        if node is None:
            results[key] = None
        elif node.is_folder:
            results[key] = _error(409, f"{path!r} is a folder")
        else:
            content_hash = node.content_hash or (EMPTY_CONTENT_HASH if not node.size else "")
            results[key] = {"etag": node.etag, "size": node.size, "content_hash": content_hash}
    return results


class Committer:
    """One commit request of ``principal``."""

    def __init__(
        self, context: NextcloudContext, writes: RequestWrites, principal: Principal
    ) -> None:
        self.context = context
        self.writes = writes
        self.principal = principal

    def folders(self, paths: list[str]) -> dict[str, Result]:
        results: dict[str, Result] = {}
        valid: list[tuple[str, str]] = []
        for key in dict.fromkeys(paths):
            try:
                valid.append((key, normalize_path(key)))
            except TreeError as exc:
                results[key] = _error(400, str(exc))
        places = []
        for key, path in sorted(valid, key=lambda item: item[1].count("/")):
            if not path:
                results[key] = {"ok": True}
                continue
            place = self.writes.place(_url(self.principal.username, path))
            decision = place.verdict.decision
            if not decision.allowed:
                results[key] = _error(decision.status, decision.reason)
            else:
                places.append((key, path, place))
        if not places:
            return results
        # One transaction: make_folder raises before it changes anything.
        with self.context.db.write() as session:
            for key, path, place in places:
                try:
                    make_folder(session, place.owner_id, place.tree_path)
                    results[key] = {"ok": True}
                except AlreadyExists:
                    node = resolve(session, place.owner_id, place.tree_path)
                    is_folder = node is not None and node.is_folder
                    results[key] = {"ok": True} if is_folder else _error(409, f"{path!r} is a file")
                except TreeError as exc:
                    results[key] = _error(exc.status, str(exc))
        return results

    def files(self, entries: list[FileEntry], environ: dict[str, Any]) -> dict[str, Result]:
        results: dict[str, Result] = {}
        ready: list[_Ready] = []
        cutoff = staged_after(self.context.settings.sweep_grace_seconds)
        wanted = [h for e in entries if e.chunks for h in e.chunks]
        with self.context.db.read() as session:
            holding = held(session, self.principal.user_id, list(dict.fromkeys(wanted)), cutoff)
        placed: list[tuple[FileEntry, str, WritePlace] | tuple[FileEntry, Result]] = []
        for entry in entries:
            placed.append(self._place(entry))
        locked = self._locked_roots(
            [_url(item[2].owner, item[2].tree_path) for item in placed if len(item) == 3]
        )
        for item in placed:
            if len(item) == 2:
                results[item[0].path] = item[1]
                continue
            entry, _path, place = item
            if locked.intersection(_lock_roots(_url(place.owner, place.tree_path))):
                results[entry.path] = _error(423, "locked")
                continue
            prepared = self._prepare(entry, place, holding)
            if isinstance(prepared, _Ready):
                ready.append(prepared)
            else:
                results[entry.path] = prepared
        self._write(ready, results)
        return results

    def _place(
        self, entry: FileEntry
    ) -> tuple[FileEntry, str, WritePlace] | tuple[FileEntry, Result]:
        """Where ``entry`` lands, or why it cannot."""
        try:
            path = normalize_path(entry.path)
            parse_mtime(None if entry.mtime is None else repr(entry.mtime))
        except (TreeError, InvalidMtime) as exc:
            return entry, _error(400, str(exc))
        if not path:
            return entry, _error(400, "cannot write the root folder")
        place = self.writes.place(_url(self.principal.username, path))
        decision = place.verdict.decision
        if not decision.allowed:
            return entry, _error(decision.status, decision.reason)
        return entry, path, place

    def _locked_roots(self, urls: list[str]) -> set[str]:
        """The lock roots among ``urls`` and their ancestors that a live lock holds (one
        query per 500 roots)."""
        roots = list(dict.fromkeys(root for url in urls for root in _lock_roots(url)))
        found: set[str] = set()
        with self.context.db.read() as session:
            for start in range(0, len(roots), 500):
                locks = list_locks_at(session, roots[start : start + 500])
                found.update(str(lock["root"]) for lock in locks)
        return found

    def _prepare(self, entry: FileEntry, place: WritePlace, holding: set[str]) -> _Ready | Result:
        try:
            content = self._content(entry, holding)
        except MissingChunksError as exc:
            return _error(409, "missing chunks", missing=exc.missing)
        except Exception as exc:
            full = storage_failure(exc)
            if full is None:
                raise
            log.error("push commit of %r answered %d: %s", entry.path, full.status, full.reason)
            return _error(full.status, full.reason)
        if content is not None and content.size != entry.size:
            return _error(400, f"the chunks hold {content.size} bytes, size says {entry.size}")
        return _Ready(entry.path, place.owner_id, place.tree_path, content, entry)

    def _content(self, entry: FileEntry, holding: set[str]) -> StoredContent | None:
        chain = self.context.chain
        if entry.data is not None:
            if not entry.data:
                return None
            return chain.ingest([entry.data], expected_length=len(entry.data), publish=False)
        assert entry.chunks is not None
        if not entry.chunks:
            return None
        missing = [h for h in dict.fromkeys(entry.chunks) if h not in holding]
        if missing:
            raise MissingChunksError(missing)
        return assemble(chain.db, chain.store, chain.inline, entry.chunks)

    def _write(self, ready: list[_Ready], results: dict[str, Result]) -> None:
        if not ready:
            return
        settings = self.context.settings
        chain = self.context.chain
        with self.context.db.write() as session:
            for item in ready:
                entry = item.entry
                try:
                    written = write_file(
                        session,
                        item.content if isinstance(item.content, PendingContent) else chain,
                        item.owner_id,
                        item.tree_path,
                        item.content,
                        mtime=parse_mtime(None if entry.mtime is None else repr(entry.mtime)),
                        require_etag=entry.if_match,
                        require_absent=entry.if_none_match,
                        default_quota_bytes=settings.default_quota_bytes,
                        expire_trash=True,
                    )
                except TreeError as exc:
                    results[item.key] = _error(exc.status, str(exc))
                    continue
                node = written.node
                results[item.key] = {
                    "etag": node.etag,
                    "fileid": oc_id(node.id, settings.instance_id),
                    "size": node.size,
                }
                commits_log.debug("committed %r for user %d", item.tree_path, item.owner_id)

"""``push_tree``: make a server folder hold what a local tree holds, fast and resumably.

One run: read the server's push parameters (capabilities), scan the tree, create the folders
the outbox does not know, then push every new or changed file in batches (linear in the number
of files; caps on files and bytes per batch) on ``concurrency`` threads. A batch reads each
file once, asks which chunks of its larger files the server lacks, uploads those, and commits
all of its files in one request; each answer is recorded in the outbox at once. With
``delete``, files and folders an earlier push put on the server and that are gone locally are
removed with WebDAV DELETE (``If-Match``: never one changed on the server since).

Every write names a precondition (``if_match`` the etag last acknowledged, or
``if_none_match`` for a file new to the outbox). A 412 is settled by asking the server's
content hash: ours (a commit whose answer was lost) -> acknowledged; the one last sent (a lost
answer to an older version) -> sent again with its etag; anything else -> changed on the
server, left alone and listed for attention. So a killed push, run again, applies nothing
twice. After an error no new batch starts; those under way finish and are recorded.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from oxidav.push.http import Connection, PushHTTPError
from oxidav.push.outbox import Acknowledged, Outbox, default_state_dir, state_file
from oxidav.push.scan import (
    EMPTY_HASH,
    ChunkParams,
    ChunkRef,
    FileChanged,
    HashedFile,
    LocalFile,
    batches,
    hash_file,
    read_chunk,
    scan,
)

log = logging.getLogger("oxidav.push")

CAPABILITIES = "/ocs/v2.php/cloud/capabilities?format=json"
FILES = "/remote.php/dav/files"
#: Frame head of a chunk in a ``chunks`` body: BLAKE3 digest, then big-endian length.
FRAME_HEAD_SIZE = 36


@dataclass
class PushOptions:
    concurrency: int = 4
    delete: bool = False
    dry_run: bool = False
    state_dir: Path | None = None
    ca_file: str | None = None
    #: Files and bytes per commit.
    batch_files: int = 1000
    batch_bytes: int = 2 << 20
    #: Files up to this size go inline in the commit (at most the server's smallest chunk).
    inline_max: int = 256 << 10
    #: Seconds a request may keep failing (server away, 429) before the push gives up.
    give_up_after: float = 300.0
    #: Called with (files done, bytes done) as the push goes (a progress display).
    progress: Callable[[int, int], None] | None = None
    #: Called once with (files, bytes) to send, when they are known.
    planned: Callable[[int, int], None] | None = None


@dataclass
class PushReport:
    files_seen: int = 0
    files_unchanged: int = 0
    files_committed: int = 0
    bytes_committed: int = 0
    folders_created: int = 0
    chunks_uploaded: int = 0
    chunk_bytes_uploaded: int = 0
    chunks_deduplicated: int = 0
    deleted: int = 0
    retries: int = 0
    seconds: float = 0.0
    attention: list[tuple[str, str]] = field(default_factory=list)
    planned: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.attention


class PushAborted(Exception):
    """The push could not go on (the server refused the credentials or stayed away)."""


class _Push:
    def __init__(
        self, local: Path, base_url: str, user: str, connection: Connection, options: PushOptions
    ) -> None:
        self.local = local
        self.user = user
        self.http = connection
        self.options = options
        self.report = PushReport()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.fatal: str | None = None
        state_dir = options.state_dir or default_state_dir()
        self.outbox = Outbox(state_file(state_dir, local, base_url, user))
        self.files_root = f"{FILES}/{quote(user, safe='')}"
        self.endpoint = ""
        self.params = ChunkParams(256 << 10, 1 << 20, 4 << 20)
        self.max_chunks_body = 16 << 20
        self.done_files = 0
        self.done_bytes = 0

    # -- the run -------------------------------------------------------------------------------

    def run(self) -> PushReport:
        started = time.monotonic()
        try:
            self._capabilities()
            tree = scan(self.local)
            self.report.files_seen = len(tree.files)
            self.report.attention.extend((p, f"skipped: {why}") for p, why in tree.skipped)
            known = self.outbox.files()
            changed = [f for f in tree.files if not _unchanged(f, known.get(f.rel))]
            self.report.files_unchanged = len(tree.files) - len(changed)
            known_folders = self.outbox.folders()
            local_folders = set(tree.folders)
            folders = [f for f in tree.folders if f not in known_folders]
            local_files = {f.rel for f in tree.files}
            gone_files = sorted(p for p in known if p not in local_files)
            gone_folders = sorted(
                (p for p in known_folders if p not in local_folders), key=lambda p: -p.count("/")
            )
            self.report.planned = {
                "folders": len(folders),
                "files": len(changed),
                "bytes": sum(f.size for f in changed),
                "deletions": len(gone_files) + len(gone_folders) if self.options.delete else 0,
            }
            if self.options.dry_run:
                return self.report
            if self.options.planned is not None:
                self.options.planned(len(changed), self.report.planned["bytes"])
            self._folders(folders)
            self._files(changed, known)
            if self.options.delete and self.fatal is None:
                self._delete(gone_files, gone_folders, known)
            if self.fatal is not None:
                raise PushAborted(self.fatal)
            return self.report
        finally:
            self.report.retries = self.http.retries
            self.report.seconds = time.monotonic() - started
            self.outbox.close()

    def _capabilities(self) -> None:
        answer = self.http.request("GET", CAPABILITIES, headers={"OCS-APIRequest": "true"})
        if answer.status != 200:
            raise PushAborted(f"the server's capabilities answered HTTP {answer.status}")
        try:
            push = answer.json()["ocs"]["data"]["capabilities"]["oxidav"]["push"]
            chunking = push["chunking"]
            version = int(push["version"])
            self.params = ChunkParams(
                int(chunking["min"]), int(chunking["avg"]), int(chunking["max"])
            )
            self.endpoint = "/" + str(push["endpoint"]).strip("/")
            self.max_chunks_body = int(push["max_chunks_body"])
        except (KeyError, TypeError, ValueError):
            raise PushAborted("the server does not offer the oxidav push protocol") from None
        if version != 1:
            raise PushAborted(f"the server speaks push protocol version {version}, not 1")
        self.options.inline_max = min(self.options.inline_max, self.params.min_size)
        self._post("need", {"chunks": []})  # the credentials, checked before anything is read

    # -- folders -------------------------------------------------------------------------------

    def _folders(self, folders: list[str]) -> None:
        for start in range(0, len(folders), 2000):
            part = folders[start : start + 2000]
            answer = self._post("commit", {"folders": part, "files": []})
            results = answer.get("folders", {})
            made = [p for p in part if results.get(p, {}).get("ok")]
            self.outbox.acknowledge_folders(made)
            self.report.folders_created += len(made)
            for path in part:
                result = results.get(path, {})
                if not result.get("ok"):
                    self._attention(path, result.get("error", "no answer"))

    # -- files ---------------------------------------------------------------------------------

    def _files(self, changed: list[LocalFile], known: dict[str, Acknowledged]) -> None:
        sent_before = self.outbox.sent()
        opts = self.options
        work = batches(changed, opts.batch_files, opts.batch_bytes)
        with ThreadPoolExecutor(max(1, opts.concurrency), thread_name_prefix="oxidav-push") as pool:
            running: set[Future[None]] = set()
            for batch in work:
                if self.stop.is_set():
                    break
                while len(running) >= opts.concurrency:
                    finished, running = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        future.result()
                running.add(pool.submit(self._batch, batch, known, sent_before))
            for future in running:
                future.result()

    def _batch(
        self, batch: list[LocalFile], known: dict[str, Acknowledged], sent_before: dict[str, str]
    ) -> None:
        try:
            self._push_batch(batch, known, sent_before)
        except PushHTTPError as exc:
            self._abort(str(exc))
        except PushAborted as exc:
            self._abort(str(exc))

    def _push_batch(
        self, batch: list[LocalFile], known: dict[str, Acknowledged], sent_before: dict[str, str]
    ) -> None:
        hashed: list[HashedFile] = []
        for file in batch:
            try:
                hashed.append(hash_file(file, self.params, self.options.inline_max))
            except OSError as exc:
                self._attention(file.rel, f"cannot read: {exc.strerror or exc}")
        pending = {h.file.rel: h for h in hashed}
        preconditions = {rel: _precondition(known.get(rel)) for rel in pending}
        for _round in range(3):
            if not pending or self.stop.is_set():
                return
            try:
                self._upload_missing(list(pending.values()))
            except FileChanged as exc:
                self._attention(str(exc), "changed while it was pushed; push again")
                pending.pop(str(exc), None)
                continue
            self.outbox.mark_sent((rel, h.content_hash) for rel, h in pending.items())
            answer = self._post(
                "commit",
                {"files": [_file_entry(h, preconditions[rel]) for rel, h in pending.items()]},
            )
            results = answer.get("files", {})
            retry: dict[str, HashedFile] = {}
            acknowledged: list[tuple[str, Acknowledged]] = []
            stale: list[str] = []
            for rel, item in pending.items():
                result = results.get(rel)
                if result is None:
                    self._attention(rel, "the server did not answer for it")
                    stale.append(rel)
                elif "etag" in result:
                    acknowledged.append((rel, _acknowledged(item, str(result["etag"]))))
                elif result.get("status") == 409 and result.get("missing"):
                    self.outbox.forget_chunks(result["missing"])
                    retry[rel] = item
                elif result.get("status") == 412:
                    settled = self._settle_conflict(rel, item, sent_before.get(rel))
                    if isinstance(settled, Acknowledged):
                        acknowledged.append((rel, settled))
                    elif isinstance(settled, dict):
                        preconditions[rel] = settled
                        retry[rel] = item
                    else:
                        stale.append(rel)
                else:
                    status = result.get("status", "?")
                    self._attention(rel, f"{status}: {result.get('error', 'refused')}")
                    stale.append(rel)
            self.outbox.acknowledge_files(acknowledged)
            self.outbox.settle(stale)
            with self.lock:
                self.report.files_committed += len(acknowledged)
                self.report.bytes_committed += sum(a.size for _, a in acknowledged)
                self.done_files += len(acknowledged) + len(stale)
                self.done_bytes += sum(pending[rel].size for rel, _ in acknowledged)
                if self.options.progress is not None:
                    self.options.progress(self.done_files, self.done_bytes)
            pending = retry
        for rel in pending:
            self._attention(rel, "could not be committed after 3 attempts")

    def _settle_conflict(
        self, rel: str, item: HashedFile, sent_hash: str | None
    ) -> Acknowledged | dict[str, Any] | None:
        """A 412 (see the module docstring)."""
        state = self._post("stat", {"paths": [rel]}).get("files", {}).get(rel)
        if not isinstance(state, dict) or "content_hash" not in state:
            if state is None:  # gone from the server since: write it as new
                return {"if_none_match": True}
            self._attention(rel, f"{state.get('status', '?')}: {state.get('error', 'refused')}")
            return None
        if state["content_hash"] == item.content_hash:
            return _acknowledged(item, str(state["etag"]))
        if sent_hash is not None and state["content_hash"] == sent_hash:
            return {"if_match": str(state["etag"])}
        self._attention(rel, "changed on the server since the last push; left as it is there")
        return None

    def _upload_missing(self, items: list[HashedFile]) -> None:
        refs: dict[str, tuple[LocalFile, ChunkRef]] = {}
        for item in items:
            for ref in item.chunks:
                refs.setdefault(ref.hash, (item.file, ref))
        if not refs:
            return
        fresh = self.outbox.fresh_chunks(refs)
        ask = [h for h in refs if h not in fresh]
        need: set[str] = set()
        for start in range(0, len(ask), 5000):
            answer = self._post("need", {"chunks": ask[start : start + 5000]})
            need.update(answer.get("need", []))
        with self.lock:
            self.report.chunks_deduplicated += len(refs) - len(need)
        frames: list[bytes] = []
        size = 0
        for key in [h for h in refs if h in need]:
            file, ref = refs[key]
            data = read_chunk(file, ref)
            if frames and size + FRAME_HEAD_SIZE + len(data) > self.max_chunks_body:
                self._send_chunks(frames)
                frames, size = [], 0
            frames.append(bytes.fromhex(key) + len(data).to_bytes(4, "big") + data)
            size += FRAME_HEAD_SIZE + len(data)
        if frames:
            self._send_chunks(frames)

    def _send_chunks(self, frames: list[bytes]) -> None:
        body = b"".join(frames)
        answer = self.http.request(
            "POST", f"{self.endpoint}/chunks", body, {"Content-Type": "application/octet-stream"}
        )
        document = _document(answer.status, answer.body, "chunks")
        stored = document.get("stored", [])
        refused = document.get("refused", {})
        if refused:
            raise PushAborted(f"the server refused {len(refused)} chunk(s): {refused}")
        self.outbox.acknowledge_chunks(stored)
        with self.lock:
            self.report.chunks_uploaded += len(stored)
            self.report.chunk_bytes_uploaded += len(body) - FRAME_HEAD_SIZE * len(frames)

    # -- deletions -----------------------------------------------------------------------------

    def _delete(self, files: list[str], folders: list[str], known: dict[str, Acknowledged]) -> None:
        for rel in files:
            answer = self.http.request(
                "DELETE", f"{self.files_root}{rel}", headers={"If-Match": f'"{known[rel].etag}"'}
            )
            if answer.status in (200, 204, 404):
                self.outbox.forget(files=[rel])
                self.report.deleted += answer.status != 404
            elif answer.status == 412:
                self._attention(rel, "changed on the server since the last push; not deleted")
                self.outbox.forget(files=[rel])
            else:
                self._attention(rel, f"DELETE answered HTTP {answer.status}")
        for rel in folders:
            answer = self.http.request("DELETE", f"{self.files_root}{rel}")
            if answer.status in (200, 204, 404):
                self.outbox.forget(folders=[rel])
                self.report.deleted += answer.status != 404
            else:
                self._attention(rel, f"DELETE answered HTTP {answer.status}")

    # -- helpers -------------------------------------------------------------------------------

    def _post(self, action: str, document: dict[str, Any]) -> dict[str, Any]:
        answer = self.http.post_json(f"{self.endpoint}/{action}", document)
        return _document(answer.status, answer.body, action)

    def _attention(self, path: str, reason: str) -> None:
        with self.lock:
            self.report.attention.append((path, reason))

    def _abort(self, reason: str) -> None:
        with self.lock:
            if self.fatal is None:
                self.fatal = reason
        self.stop.set()


def _document(status: int, body: bytes, action: str) -> dict[str, Any]:
    try:
        document = json.loads(body) if body else {}
    except ValueError:
        document = {}
    if status != 200:
        reason = document.get("error") if isinstance(document, dict) else None
        raise PushAborted(f"{action} answered HTTP {status}: {reason or body[:200]!r}")
    if not isinstance(document, dict):
        raise PushAborted(f"{action} answered something that is not a JSON object")
    return document


def _unchanged(file: LocalFile, known: Acknowledged | None) -> bool:
    return known is not None and known.size == file.size and known.mtime_ns == file.mtime_ns


def _precondition(known: Acknowledged | None) -> dict[str, Any]:
    return {"if_match": known.etag} if known is not None else {"if_none_match": True}


def _acknowledged(item: HashedFile, etag: str) -> Acknowledged:
    return Acknowledged(item.file.size, item.file.mtime_ns, item.content_hash, etag)


def _file_entry(item: HashedFile, precondition: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "path": item.file.rel,
        "size": item.size,
        "mtime": item.file.mtime_ns / 1e9,
        **precondition,
    }
    if item.data is not None:
        entry["data"] = base64.b64encode(item.data).decode("ascii")
    else:
        entry["chunks"] = [ref.hash for ref in item.chunks]
    return entry


def push_tree(
    local: str | Path,
    url: str,
    user: str,
    password: str,
    options: PushOptions | None = None,
) -> PushReport:
    """Push the tree at ``local`` to the files of ``user`` on the server at ``url`` (its base
    URL: ``https://host`` or ``https://host/base``). Raises ``PushAborted`` when the push
    cannot go on; files that fail one by one are in ``PushReport.attention``."""
    options = options or PushOptions()
    root = Path(local)
    if not root.is_dir():
        raise PushAborted(f"{root} is not a folder")
    connection = Connection(
        url, user, password, ca_file=options.ca_file, give_up_after=options.give_up_after
    )
    try:
        return _Push(root, url, user, connection, options).run()
    except PushHTTPError as exc:
        raise PushAborted(str(exc)) from None
    finally:
        connection.close()


__all__ = ["EMPTY_HASH", "PushAborted", "PushOptions", "PushReport", "push_tree"]

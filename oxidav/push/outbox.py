"""The durable outbox: what a push of one local tree to one server folder has had
acknowledged, in SQLite in the state folder.

- ``files``: each file the server acknowledged, with the size and mtime it had locally then
  (an unchanged file is not read again) and the etag the server answered (the next write of
  it says ``if_match``, so an edit made on the server is never overwritten silently);
- ``folders``: the folders the server acknowledged;
- ``sent``: the content hash a commit was sent with before its answer came (after a kill, the
  server's content hash tells whether that commit was applied);
- ``chunks``: chunks the server acknowledged storing, with when (it keeps them for its gc
  grace period before a commit must name them).

Invariants: a row is written only after the server's answer; every write commits at once
(WAL), so a killed client loses at most the answers under way, which the next run settles
without applying anything twice.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS files(
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    content_hash TEXT NOT NULL, etag TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS folders(path TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS sent(path TEXT PRIMARY KEY, content_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(hash TEXT PRIMARY KEY, stored_at REAL NOT NULL);
"""
#: Chunks acknowledged longer ago than this are asked about again (the server's grace is 1 h).
CHUNK_TRUST_SECONDS = 45 * 60


@dataclass(frozen=True)
class Acknowledged:
    size: int
    mtime_ns: int
    content_hash: str
    etag: str


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "oxidav-push"


def state_file(state_dir: Path, local: Path, url: str, user: str) -> Path:
    """One outbox per (local tree, server folder URL, user)."""
    key = "\0".join((str(local.resolve()), url.rstrip("/"), user)).encode("utf-8")
    return state_dir / f"{hashlib.sha256(key).hexdigest()[:24]}.sqlite"


class Outbox:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    def files(self) -> dict[str, Acknowledged]:
        with self._lock:
            rows = self._db.execute("SELECT path, size, mtime_ns, content_hash, etag FROM files")
            return {row[0]: Acknowledged(*row[1:]) for row in rows}

    def folders(self) -> set[str]:
        with self._lock:
            return {row[0] for row in self._db.execute("SELECT path FROM folders")}

    def sent(self) -> dict[str, str]:
        with self._lock:
            return dict(self._db.execute("SELECT path, content_hash FROM sent").fetchall())

    def fresh_chunks(self, hashes: Iterable[str]) -> set[str]:
        """The chunks among ``hashes`` acknowledged recently enough to commit without asking."""
        wanted = list(dict.fromkeys(hashes))
        found: set[str] = set()
        cutoff = time.time() - CHUNK_TRUST_SECONDS
        with self._lock:
            for start in range(0, len(wanted), 500):
                part = wanted[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT hash FROM chunks WHERE stored_at > ? AND hash IN ({marks})",
                    [cutoff, *part],
                )
                found.update(row[0] for row in rows)
        return found

    def _write(self, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(sql, rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def mark_sent(self, items: Iterable[tuple[str, str]]) -> None:
        self._write("INSERT OR REPLACE INTO sent VALUES (?, ?)", list(items))

    def acknowledge_files(self, items: Iterable[tuple[str, Acknowledged]]) -> None:
        rows = [(p, a.size, a.mtime_ns, a.content_hash, a.etag) for p, a in items]
        self._write("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", rows)
        self._write("DELETE FROM sent WHERE path = ?", [(row[0],) for row in rows])

    def settle(self, paths: Iterable[str]) -> None:
        """Forget what was sent for ``paths`` (they failed for good)."""
        self._write("DELETE FROM sent WHERE path = ?", [(p,) for p in paths])

    def acknowledge_folders(self, paths: Iterable[str]) -> None:
        self._write("INSERT OR REPLACE INTO folders VALUES (?)", [(p,) for p in paths])

    def acknowledge_chunks(self, hashes: Iterable[str]) -> None:
        now = time.time()
        self._write("INSERT OR REPLACE INTO chunks VALUES (?, ?)", [(h, now) for h in hashes])

    def forget_chunks(self, hashes: Iterable[str]) -> None:
        self._write("DELETE FROM chunks WHERE hash = ?", [(h,) for h in hashes])

    def forget(self, files: Iterable[str] = (), folders: Iterable[str] = ()) -> None:
        self._write("DELETE FROM files WHERE path = ?", [(p,) for p in files])
        self._write("DELETE FROM folders WHERE path = ?", [(p,) for p in folders])

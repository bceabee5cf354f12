"""Copy every chunk to another blob store, resumably, then switch the ``blob_store`` setting.

Chunks are copied in hash order, a page at a time: each chunk is read from the current store,
checked against its BLAKE3 name, written unsynced to the target (skipped if the target already
has it), and each page ends with one sync sweep on the target and a saved cursor. An
interrupted run started again with the same target resumes after the last saved page. Chunk
rows created after the first run began are checked again at the end, so a chunk written
meanwhile with a hash below the cursor is not forgotten.

Unreferenced chunks (refcount 0) are copied when they exist and skipped when they do not (they
may be intents of an unfinished ingest). Chunks kept in their rows (``oxidav.blobs.inline``)
have nothing to copy. Any referenced chunk that cannot be copied counts as a
failure, and with failures the setting is not switched.

Run it with the server stopped, or restart the server afterwards: a running process keeps
writing to the store it was started with.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import blake3
from sqlalchemy import Table, select

from oxidav.blobs.store import BlobNotFoundError, BlobStore, BlobStoreError
from oxidav.db import Database, utcnow
from oxidav.db.models.blobs import BlobChunk

PAGE = 500
STATE_FILE = "blobs-migrate.json"

_chunks: Table = BlobChunk.__table__  # type: ignore[assignment]


@dataclass
class MigrateReport:
    copied: int = 0
    skipped: int = 0
    resumed_after: str | None = None
    failed: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        resumed = f" (resumed after {self.resumed_after[:12]}…)" if self.resumed_after else ""
        return (
            f"copied {self.copied} chunk(s), {self.skipped} already there{resumed}, "
            f"{len(self.failed)} failed"
        )


def _load_state(path: Path, target_url: str) -> dict[str, str]:
    try:
        state = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return state if isinstance(state, dict) and state.get("target") == target_url else {}


def _save_state(path: Path, state: dict[str, str]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


def _copy_one(source: BlobStore, target: BlobStore, key: str, referenced: bool) -> str:
    """``"copied"``, ``"present"`` (the target has it), ``"absent"`` (an unreferenced chunk the
    source does not have either) or ``"failed"``."""
    try:
        if target.exists(key):
            return "present"
        data = source.get(key)
    except BlobNotFoundError:
        return "failed" if referenced else "absent"
    except BlobStoreError:
        return "failed"
    if blake3.blake3(data).hexdigest() != key:
        return "failed"
    target.put_unsynced(key, data)
    return "copied"


def _copy_page(
    pool: ThreadPoolExecutor,
    source: BlobStore,
    target: BlobStore,
    rows: Sequence[tuple[str, int]],
    report: MigrateReport,
) -> None:
    verdicts = list(pool.map(lambda row: _copy_one(source, target, row[0], row[1] > 0), rows))
    by_verdict: dict[str, list[str]] = {"copied": [], "present": [], "absent": [], "failed": []}
    for row, verdict in zip(rows, verdicts, strict=True):
        by_verdict[verdict].append(row[0])
    # Blobs already there may be unsynced writes of an interrupted run: they are synced too.
    target.sync(by_verdict["copied"] + by_verdict["present"])
    report.copied += len(by_verdict["copied"])
    report.skipped += len(by_verdict["present"]) + len(by_verdict["absent"])
    report.failed.extend(by_verdict["failed"])


def migrate(
    db: Database, source: BlobStore, target: BlobStore, target_url: str, state_dir: Path
) -> MigrateReport:
    """Copy every chunk from ``source`` to ``target`` (see the module docstring). Progress is
    kept in ``state_dir/blobs-migrate.json`` and removed when the copy is complete."""
    state_path = state_dir / STATE_FILE
    state = _load_state(state_path, target_url)
    report = MigrateReport(resumed_after=state.get("after") or None)
    started = state.get("started") or utcnow().isoformat()
    after = state.get("after", "")
    workers = max(source.concurrency, target.concurrency, 1)
    with ThreadPoolExecutor(workers) as pool:
        while True:
            with db.read() as session:
                rows = [
                    (row.hash, row.refcount)
                    for row in session.execute(
                        select(_chunks.c.hash, _chunks.c.refcount)
                        .where(_chunks.c.hash > after, _chunks.c.data.is_(None))
                        .order_by(_chunks.c.hash)
                        .limit(PAGE)
                    )
                ]
            if not rows:
                break
            _copy_page(pool, source, target, rows, report)
            after = rows[-1][0]
            _save_state(state_path, {"target": target_url, "after": after, "started": started})
        # Rows created since the first run began may sort before the cursor.
        since = datetime.fromisoformat(started)
        with db.read() as session:
            late = [
                (row.hash, row.refcount)
                for row in session.execute(
                    select(_chunks.c.hash, _chunks.c.refcount).where(
                        _chunks.c.created_at >= since, _chunks.c.data.is_(None)
                    )
                )
            ]
        for start in range(0, len(late), PAGE):
            _copy_page(pool, source, target, late[start : start + PAGE], report)
    if not report.failed:
        state_path.unlink(missing_ok=True)
    return report


_SETTING_LINE = re.compile(r"^\s*blob_store\s*=.*$", re.MULTILINE)


def switch_blob_store_setting(config_path: Path, url: str) -> None:
    """Set ``blob_store = "<url>"`` in the TOML config file, keeping everything else."""
    line = f"blob_store = {json.dumps(url)}"
    text = config_path.read_text() if config_path.exists() else ""
    if _SETTING_LINE.search(text):
        text = _SETTING_LINE.sub(lambda _m: line, text, count=1)
    else:
        # Top-level keys must precede any [table]; oxidav's config has none, but be safe.
        table = re.search(r"^\s*\[", text, re.MULTILINE)
        at = table.start() if table else len(text)
        head = text[:at]
        if head and not head.endswith("\n"):
            head += "\n"
        text = head + line + "\n" + text[at:]
    tmp = config_path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, config_path)


__all__ = ["MigrateReport", "migrate", "switch_blob_store_setting"]

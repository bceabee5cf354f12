"""Copy every chunk to another blob store, resumably, then switch the ``blob_store`` setting.

Two phases:

1. *Copy* (online: servers may keep running and writing to the current store). Chunks are copied
   in hash order, a page at a time: each chunk is read from the current store, checked against
   its BLAKE3 name, written unsynced to the target (skipped if the target already has it), and
   each page ends with one sync sweep on the target and a saved cursor
   (``DATA_DIR/blobs-migrate.json``). An interrupted run started again with the same target
   resumes after the last saved page.
2. *Finish* (offline). Under ``oxidav.presence.exclusive`` — refused while any server process
   is live, and no server starts while it runs — every shard of the target is listed and
   compared with the chunk rows of that shard: each row whose bytes the target lacks (written
   or reused by a server since its page was copied) is copied now, and each target blob without
   a row (collected by gc since its copy) is adopted as an unreferenced row, for gc. Then, still
   under the same exclusion, the new store is recorded in the database (a server configured
   with another store then refuses to start: ``oxidav.presence.record_blob_store``) and
   ``on_complete`` switches the setting. No server can write to the
   old store after the finishing pass has looked at its chunks: nothing is lost by the switch.

Unreferenced chunks (refcount 0) are copied when they exist and skipped when they do not (they
may be intents of an unfinished ingest). Chunks kept in their rows (``oxidav.blobs.inline``)
have nothing to copy. A referenced chunk that the finishing pass cannot copy is a failure, and
with failures the setting is not switched. Both phases stop between pages when ``stop`` asks.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import blake3
from sqlalchemy import Table, func, select

from oxidav.blobs import catalog
from oxidav.blobs.local import SHARDS
from oxidav.blobs.store import BlobNotFoundError, BlobStore, BlobStoreError
from oxidav.db import Database, utcnow
from oxidav.db.models.blobs import BlobChunk
from oxidav.presence import exclusive, record_blob_store
from oxidav.progress import Meter, Phase, StopFlag

PAGE = 500
STATE_FILE = "blobs-migrate.json"
#: The one-line refusal of the finishing pass while servers run (the CLI adds who runs).
REFUSAL = (
    "the copy is done up to now, but the switch needs every oxidav server stopped: stop them"
    " and run the same command again (it resumes and finishes quickly)"
)

_chunks: Table = BlobChunk.__table__  # type: ignore[assignment]


@dataclass
class MigrateReport:
    copied: int = 0
    skipped: int = 0
    adopted: int = 0
    resumed_after: str | None = None
    failed: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        resumed = f" (resumed after {self.resumed_after[:12]}…)" if self.resumed_after else ""
        adopted = f", {self.adopted} stray blob(s) adopted for gc" if self.adopted else ""
        return (
            f"copied {self.copied} chunk(s), {self.skipped} already there{resumed}{adopted}, "
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


def _copy_one(
    source: BlobStore, target: BlobStore, key: str, referenced: bool, known_absent: bool = False
) -> str:
    """``"copied"``, ``"present"`` (the target has it), ``"absent"`` (an unreferenced chunk the
    source does not have either) or ``"failed"``."""
    try:
        if not known_absent and target.exists(key):
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


def _copy_rows(
    pool: ThreadPoolExecutor,
    source: BlobStore,
    target: BlobStore,
    rows: Sequence[tuple[str, int]],
    known_absent: bool = False,
) -> dict[str, list[str]]:
    """Copy the chunks of ``rows`` (hash, refcount); the keys by verdict. What was copied, or
    found there, is synced (it may be an unsynced write of an interrupted run)."""
    verdicts = list(
        pool.map(lambda row: _copy_one(source, target, row[0], row[1] > 0, known_absent), rows)
    )
    by_verdict: dict[str, list[str]] = {"copied": [], "present": [], "absent": [], "failed": []}
    for row, verdict in zip(rows, verdicts, strict=True):
        by_verdict[verdict].append(row[0])
    target.sync(by_verdict["copied"] + by_verdict["present"])
    return by_verdict


def _totals(db: Database, after: str) -> tuple[int, int]:
    with db.read() as session:
        count, size = session.execute(
            select(func.count(), func.coalesce(func.sum(_chunks.c.size), 0)).where(
                _chunks.c.hash > after, _chunks.c.data.is_(None)
            )
        ).one()
    return int(count), int(size)


def _copy_phase(
    db: Database,
    pool: ThreadPoolExecutor,
    source: BlobStore,
    target: BlobStore,
    state: dict[str, str],
    state_path: Path,
    report: MigrateReport,
    meter: Meter,
    stop: StopFlag,
) -> None:
    after = state.get("after", "")
    count, size = _totals(db, after)
    phase = meter.phase("copy", count, size, unit="chunks")
    while True:
        stop.check()
        with db.read() as session:
            rows = session.execute(
                select(_chunks.c.hash, _chunks.c.refcount, _chunks.c.size)
                .where(_chunks.c.hash > after, _chunks.c.data.is_(None))
                .order_by(_chunks.c.hash)
                .limit(PAGE)
            ).all()
        if not rows:
            break
        # Failures here are provisional: the finishing pass decides (gc may have collected a
        # chunk that was referenced when its page was read).
        verdicts = _copy_rows(pool, source, target, [(r.hash, r.refcount) for r in rows])
        report.copied += len(verdicts["copied"])
        report.skipped += len(verdicts["present"]) + len(verdicts["absent"])
        after = rows[-1].hash
        state["after"] = after
        _save_state(state_path, state)
        phase.advance(len(rows), sum(r.size for r in rows))
    phase.done()


class _Unordered(Exception):
    """The store does not list its keys grouped by shard."""


def _listing_by_shard(store: BlobStore) -> Iterator[tuple[str, set[str]]]:
    """The keys of ``store`` grouped by shard, in shard order (how local and S3 stores list);
    raises ``_Unordered`` when the listing turns out not to be."""
    current: str | None = None
    group: set[str] = set()
    for key in store.iter_keys():
        shard = key[:2]
        if shard != current:
            if current is not None:
                if shard < current:
                    raise _Unordered
                yield current, group
            current, group = shard, set()
        group.add(key)
    if current is not None:
        yield current, group


def _listing_read_whole(store: BlobStore) -> Iterator[tuple[str, set[str]]]:
    everything: dict[str, set[str]] = {}
    for key in store.iter_keys():
        everything.setdefault(key[:2], set()).add(key)
    yield from sorted(everything.items())


def _shard_rows(db: Database, shard: str) -> list[tuple[str, int]]:
    upper = format(int(shard, 16) + 1, "02x") if shard != "ff" else None
    query = select(_chunks.c.hash, _chunks.c.refcount).where(
        _chunks.c.hash >= shard, _chunks.c.data.is_(None)
    )
    if upper is not None:
        query = query.where(_chunks.c.hash < upper)
    with db.read() as session:
        return [(row.hash, row.refcount) for row in session.execute(query)]


def _finish_phase(
    db: Database,
    pool: ThreadPoolExecutor,
    source: BlobStore,
    target: BlobStore,
    report: MigrateReport,
    meter: Meter,
    stop: StopFlag,
) -> None:
    """The offline pass of the module docstring, shard by shard (again from the start, on a
    whole listing, if the target does not list by shard: every step is idempotent)."""
    phase = meter.phase("finish", len(SHARDS), unit="shards")
    try:
        _finish_shards(db, pool, source, target, report, stop, phase, _listing_by_shard(target))
    except _Unordered:
        phase.items = 0
        _finish_shards(db, pool, source, target, report, stop, phase, _listing_read_whole(target))
    phase.done()


def _finish_shards(
    db: Database,
    pool: ThreadPoolExecutor,
    source: BlobStore,
    target: BlobStore,
    report: MigrateReport,
    stop: StopFlag,
    phase: Phase,
    listing: Iterator[tuple[str, set[str]]],
) -> None:
    pending = next(listing, None)
    for shard in SHARDS:
        stop.check()
        stored: set[str] = set()
        while pending is not None and pending[0] <= shard:
            if pending[0] == shard:
                stored = pending[1]
            pending = next(listing, None)
        rows = _shard_rows(db, shard)
        lacking = [row for row in rows if row[0] not in stored]
        for start in range(0, len(lacking), PAGE):
            verdicts = _copy_rows(pool, source, target, lacking[start : start + PAGE], True)
            report.copied += len(verdicts["copied"])
            report.failed.extend(verdicts["failed"])
        stray = stored - {row[0] for row in rows}
        if stray:
            report.adopted += _adopt(db, target, sorted(stray))
        phase.advance(1, 0)


def _adopt(db: Database, target: BlobStore, keys: list[str]) -> int:
    """Give the target blobs ``keys`` (no chunk row) unreferenced rows, for gc to collect."""
    sizes: dict[str, int] = {}
    for key in keys:
        try:
            sizes[key] = target.size(key)
        except BlobNotFoundError:
            continue
    if not sizes:
        return 0
    with db.write() as session:
        return catalog.adopt_orphan_files(session, sizes, utcnow())


def migrate(
    db: Database,
    source: BlobStore,
    target: BlobStore,
    target_url: str,
    state_dir: Path,
    *,
    on_complete: Callable[[], None] | None = None,
    meter: Meter | None = None,
    stop: StopFlag | None = None,
) -> MigrateReport:
    """Copy every chunk from ``source`` to ``target`` and, without failures, call
    ``on_complete`` while servers are still excluded (see the module docstring). Raises
    ``oxidav.presence.ServersRunningError`` when servers run at the finishing pass, and
    ``oxidav.progress.Interrupted`` when ``stop`` asked; both leave a state to resume from.
    The state file is removed when the migration is complete."""
    state_path = state_dir / STATE_FILE
    state = _load_state(state_path, target_url)
    report = MigrateReport(resumed_after=state.get("after") or None)
    state = {"target": target_url, "after": state.get("after", "")}
    meter = meter or Meter("migrate", quiet=True)
    stop = stop or StopFlag()
    workers = max(source.concurrency, target.concurrency, 1)
    with ThreadPoolExecutor(workers) as pool:
        _copy_phase(db, pool, source, target, state, state_path, report, meter, stop)
        with exclusive(db, f"oxidav blobs migrate --to {target_url}", REFUSAL):
            _finish_phase(db, pool, source, target, report, meter, stop)
            if not report.failed:
                record_blob_store(db, target_url)
                if on_complete is not None:
                    on_complete()
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

"""The local store's write path: unnamed file + link (O_TMPFILE), its rename fallback, and the
sync sweep — atomic names, no leftovers, re-writes that repair (and only ever swap a name to
bytes already on disk), missing keys that surface."""

from __future__ import annotations

import os
from pathlib import Path

import blake3
import pytest

from oxidav.blobs import BlobNotFoundError, LocalBlobStore
from oxidav.blobs.local import SYNC_PARALLEL_MIN, TMP_DIR
from tests.support.blobs import random_bytes


def key_of(data: bytes) -> str:
    return blake3.blake3(data).hexdigest()


def stored_files(root: Path) -> list[str]:
    return sorted(
        name for shard in root.iterdir() if shard.name != TMP_DIR for name in os.listdir(shard)
    )


@pytest.mark.parametrize("unnamed", [True, False], ids=["o_tmpfile", "rename"])
@pytest.mark.parametrize("durable", [True, False], ids=["put", "put_unsynced"])
def test_write_names_only_complete_files(tmp_path: Path, unnamed: bool, durable: bool) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    store._unnamed_writes = unnamed and store._unnamed_writes
    blobs = [random_bytes(n, seed=n) for n in (0, 1, 70_000, 300_000)]
    for data in blobs:
        (store.put if durable else store.put_unsynced)(key_of(data), data)
    store.sync([key_of(data) for data in blobs])
    assert stored_files(store.root) == sorted(key_of(data) for data in blobs)
    assert os.listdir(store.root / TMP_DIR) == []  # no temporary name left behind
    for data in blobs:
        assert store.get(key_of(data)) == data
        # Private to the server's user (issue 26), whatever the umask allows.
        assert store.path(key_of(data)).stat().st_mode & 0o777 == 0o600 & ~_umask()
    # Where the file system can, the fast path really ran (it did not fall back silently).
    assert store._unnamed_writes == (unnamed and _fs_has_o_tmpfile(store.root / "00"))
    store.close()


def _fs_has_o_tmpfile(folder: Path) -> bool:
    try:
        os.close(os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600))
    except (AttributeError, OSError):
        return False
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("unnamed", [True, False], ids=["o_tmpfile", "rename"])
def test_rewrite_repairs_a_damaged_file(tmp_path: Path, unnamed: bool) -> None:
    """An existing key is replaced, not skipped: a file torn by a crash before its sync sweep
    is healed by the next write of the same chunk."""
    store = LocalBlobStore(tmp_path / "blobs")
    store._unnamed_writes = unnamed and store._unnamed_writes
    data = random_bytes(200_000, seed=9)
    key = key_of(data)
    store.put_unsynced(key, data)
    store.path(key).write_bytes(data[:1000])  # what a crash could leave
    store.put_unsynced(key, data)
    store.sync([key])
    assert store.get(key) == data
    assert os.listdir(store.root / TMP_DIR) == []
    store.close()


@pytest.mark.parametrize("unnamed", [True, False], ids=["o_tmpfile", "rename"])
def test_an_unsynced_rewrite_takes_the_name_only_with_its_bytes_on_disk(
    tmp_path: Path, unnamed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two ingests of one chunk: the first has written and synced it and may commit its
    manifest at any moment; the second's unsynced write must not swap that name to bytes a
    crash could lose. A new key written unsynced is not fsynced (the sweep does that)."""
    store = LocalBlobStore(tmp_path / "blobs")
    store._unnamed_writes = unnamed and store._unnamed_writes
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync")
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        events.append("rename")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    data = random_bytes(300_000, seed=10)
    key = key_of(data)
    store.put_unsynced(key, data)
    assert "fsync" not in events  # a new name: durability is the sync sweep's job
    store.sync([key])
    events.clear()
    store.put_unsynced(key, data)  # the second ingest of the same chunk
    assert events == ["fsync", "rename"]
    assert store.get(key) == data and os.listdir(store.root / TMP_DIR) == []
    store.close()


@pytest.mark.parametrize("count", [3, SYNC_PARALLEL_MIN + 5], ids=["serial", "parallel"])
def test_sync_of_a_missing_key_raises(tmp_path: Path, count: int) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    blobs = [random_bytes(1000, seed=i) for i in range(count)]
    for data in blobs:
        store.put_unsynced(key_of(data), data)
    missing = key_of(b"never written")
    with pytest.raises(BlobNotFoundError) as raised:
        store.sync([key_of(data) for data in blobs] + [missing])
    assert raised.value.key == missing
    store.close()


def test_store_is_usable_after_close(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    store.put(key_of(b"one"), b"one")
    store.close()
    store.put(key_of(b"two"), b"two")  # the root descriptor is opened again
    store.sync([key_of(b"one"), key_of(b"two")])
    assert store.get(key_of(b"two")) == b"two"
    store.close()

"""The local store's read path: a range of at most one block is read at once (positioned reads,
no descriptor left open), a longer one streams block by block — both equal to a slice."""

from __future__ import annotations

import os
from pathlib import Path

import blake3
import pytest

from oxidav.blobs import BlobNotFoundError, LocalBlobStore
from oxidav.blobs.regions import FEED_PIECE, FileRegion
from tests.support.blobs import random_bytes


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize(
    ("start", "end", "block"),
    [
        (0, 0, 1000),  # empty
        (10, 20, 1000),  # inside one block: read at once
        (0, 1000, 1000),  # exactly one block
        (0, 1001, 1000),  # one byte more: streamed
        (2_500, 9_999, 1000),
        (9_990, 20_000, 1000),  # past the end: cut, like a slice
        (9_990, 20_000, 100_000),
        (10_000, 10_010, 1000),  # at the end: nothing
        (20_000, 20_010, 1000),  # beyond the end: nothing
    ],
)
def test_ranges_equal_slices(tmp_path: Path, start: int, end: int, block: int) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    data = random_bytes(10_000, seed=3)
    key = blake3.blake3(data).hexdigest()
    store.put(key, data)
    pieces = list(store.get_range(key, start, end, block))
    assert b"".join(pieces) == data[start:end]
    assert all(0 < len(piece) <= block for piece in pieces)


def test_a_small_range_leaves_no_descriptor_open(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    data = random_bytes(300_000, seed=4)
    key = blake3.blake3(data).hexdigest()
    store.put(key, data)
    before = open_descriptors()
    pending = [store.get_range(key, 1000 * i, 1000 * i + 65_536) for i in range(50)]
    assert open_descriptors() == before  # nothing held while the pieces wait to be consumed
    assert [b"".join(p) for p in pending] == [data[1000 * i : 1000 * i + 65_536] for i in range(50)]


def test_missing_or_invalid_keys_raise_when_called(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    missing = "ab" * 32
    with pytest.raises(BlobNotFoundError):
        store.get_range(missing, 0, 10)  # small: read at once
    with pytest.raises(BlobNotFoundError):
        store.get_range(missing, 0, 10_000_000)  # streamed
    with pytest.raises(BlobNotFoundError):
        store.get(missing)
    with pytest.raises(ValueError):
        store.get_range("../etc/passwd", 0, 10)
    with pytest.raises(ValueError):
        store.get_range(missing, 10, 5)


def test_a_region_feeds_its_bytes_in_order_without_a_mapping(tmp_path: Path) -> None:
    """``feed`` hands the region's bytes (a narrowed region's only) in pieces of at most
    ``FEED_PIECE`` bytes, also after the key is deleted, and says how many it read: fewer
    when the file is shorter than the region."""
    store = LocalBlobStore(tmp_path / "blobs")
    data = os.urandom(2 * FEED_PIECE + 12345)
    key = blake3.blake3(data).hexdigest()
    store.put(key, data)
    with store.region(key) as region:
        store.delete(key)
        pieces: list[bytes] = []
        assert region.feed(lambda piece: pieces.append(bytes(piece))) == len(data)
        assert b"".join(pieces) == data and max(map(len, pieces)) <= FEED_PIECE
        hasher = blake3.blake3()
        region.narrow(100, FEED_PIECE + 200).feed(hasher.update)
        assert hasher.digest() == blake3.blake3(data[100 : FEED_PIECE + 200]).digest()
    path = tmp_path / "short"
    path.write_bytes(data)
    with FileRegion.open(str(path)) as region:
        os.truncate(path, 1000)
        assert region.feed(lambda piece: None) == 1000


def test_a_region_is_the_whole_blob_and_outlives_its_file(tmp_path: Path) -> None:
    """``region`` opens and maps the whole blob; its bytes stay those of the file as it was
    when opened, also after the key is deleted or replaced (new inode) — how chunk files
    change; ``narrow`` keeps a part; ``close`` releases the descriptor."""
    store = LocalBlobStore(tmp_path / "blobs")
    data = os.urandom(300_000)
    key = blake3.blake3(data).hexdigest()
    store.put(key, data)
    region = store.region(key)
    assert len(region) == len(data) and region.view.readonly and bytes(region) == data
    store.delete(key)
    assert bytes(region) == data
    store.put(key, b"other bytes")
    assert bytes(region) == data
    with store.region(key) as other:
        assert bytes(other) == b"other bytes"
    assert bytes(region.narrow(1000, 5000)) == data[1000:5000] and len(region) == 4000
    with pytest.raises(ValueError):
        region.narrow(0, 4001)
    fd = region.fd
    region.close()
    region.close()
    with pytest.raises(OSError):
        os.fstat(fd)
    empty = blake3.blake3(b"").hexdigest()
    store.put(empty, b"")
    with store.region(empty) as nothing:
        assert len(nothing) == 0 and bytes(nothing) == b""
    with pytest.raises(BlobNotFoundError):
        store.region("ab" * 32)

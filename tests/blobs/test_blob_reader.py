"""ContentReader: read, seek, tell, ranges; corrupt and missing chunks raise (SQLite + PG)."""

from __future__ import annotations

import io
import random

import pytest

from oxidav.blobs import BlobChain, BlobIntegrityError, BlobNotFoundError
from oxidav.blobs.reader import ENTRY_PAGE

from .support import pieces, random_bytes

DATA = random_bytes(5_000_000, seed=11)


@pytest.fixture
def stored(chain: BlobChain) -> str:
    return chain.ingest(pieces(DATA)).manifest_hash


def test_read_in_pieces(chain: BlobChain, stored: str) -> None:
    with chain.open(stored) as reader:
        assert reader.size == len(DATA)
        assert reader.readable() and reader.seekable()
        out = bytearray()
        while piece := reader.read(77_777):
            out += piece
        assert out == DATA
        assert reader.read(10) == b""
        assert reader.tell() == len(DATA)


def test_seek_and_tell(chain: BlobChain, stored: str) -> None:
    with chain.open(stored) as reader:
        assert reader.seek(1_234_567) == 1_234_567
        assert reader.read(1000) == DATA[1_234_567:1_235_567]
        assert reader.seek(-10, io.SEEK_END) == len(DATA) - 10
        assert reader.read() == DATA[-10:]
        reader.seek(100)
        assert reader.seek(50, io.SEEK_CUR) == 150
        assert reader.read(5) == DATA[150:155]
        reader.seek(len(DATA) + 100)
        assert reader.read(5) == b""
        with pytest.raises(ValueError):
            reader.seek(-1)


def test_readinto_and_buffered_wrapper(chain: BlobChain, stored: str) -> None:
    with chain.open(stored) as reader:
        buf = bytearray(500)
        reader.seek(999)
        n = reader.readinto(buf)
        assert buf[:n] == DATA[999 : 999 + n]
        reader.seek(0)
        buffered = io.BufferedReader(reader, 64 * 1024)
        assert buffered.read() == DATA


def test_iter_range(chain: BlobChain, stored: str) -> None:
    rng = random.Random(3)
    with chain.open(stored) as reader:
        assert b"".join(reader.iter_range(0, len(DATA))) == DATA
        for _ in range(30):
            a = rng.randrange(len(DATA))
            b = rng.randrange(a, len(DATA) + 1)
            assert b"".join(reader.iter_range(a, b, block=10_000)) == DATA[a:b]
        assert all(len(p) <= 4096 for p in reader.iter_range(0, 100_000, 4096))
        assert b"".join(reader.iter_range(len(DATA) - 5, len(DATA) + 100)) == DATA[-5:]
        assert list(reader.iter_range(10, 10)) == []
        assert list(reader.iter_range(len(DATA) + 1, len(DATA) + 9)) == []
        with pytest.raises(ValueError):
            list(reader.iter_range(5, 4))


def test_many_chunks_span_entry_pages(chain: BlobChain) -> None:
    # More chunks than one page of entries.
    data = b"".join(random_bytes(70_000, seed=i) + bytes(70_000) for i in range(ENTRY_PAGE))
    manifest = chain.ingest(pieces(data, 1 << 20)).manifest_hash
    with chain.open(manifest) as reader:
        assert b"".join(reader.iter_range(0, len(data), 1 << 20)) == data
        reader.seek(len(data) - 1000)
        assert reader.read() == data[-1000:]


def test_corrupt_chunk_raises(chain: BlobChain, stored: str, local_store) -> None:
    key = next(iter(local_store.iter_keys()))
    path = local_store.path(key)
    raw = bytearray(path.read_bytes())
    raw[100] ^= 0xFF
    path.write_bytes(bytes(raw))
    with chain.open(stored) as reader, pytest.raises(BlobIntegrityError):
        reader.read()


def test_missing_chunk_raises(chain: BlobChain, stored: str, local_store) -> None:
    for key in list(local_store.iter_keys()):
        local_store.delete(key)
    with chain.open(stored) as reader, pytest.raises(BlobNotFoundError):
        reader.read(10)


def test_closed_reader(chain: BlobChain, stored: str) -> None:
    reader = chain.open(stored)
    reader.close()
    with pytest.raises(ValueError):
        reader.read(1)

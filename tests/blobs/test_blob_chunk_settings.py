"""Chunk sizes as settings: the defaults match the chunker's, the chain built from settings
chunks with them, and impossible sizes stop start-up with a clear error (SQLite + PG)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oxidav.blobs import BlobChain, catalog
from oxidav.blobs.chunking import DEFAULT_CHUNK_PARAMS, ChunkParams
from oxidav.db import Database
from oxidav.settings import Settings, SettingsError, load_settings
from tests.support.blobs import chunk_refcounts, pieces, random_bytes


def test_setting_defaults_are_the_chunker_defaults() -> None:
    settings = Settings()
    assert (
        ChunkParams(settings.blob_chunk_min, settings.blob_chunk_avg, settings.blob_chunk_max)
        == DEFAULT_CHUNK_PARAMS
    )


def test_chain_from_settings_chunks_with_the_configured_sizes(
    database: Database, tmp_path: Path
) -> None:
    settings = load_settings(
        {
            "data_dir": tmp_path,
            "blob_chunk_min": 16 << 10,
            "blob_chunk_avg": 64 << 10,
            "blob_chunk_max": 128 << 10,
        },
        env={},
    )
    chain = BlobChain.from_settings(settings, database)
    data = random_bytes(4_000_000, seed=21)
    stored = chain.ingest(pieces(data, 1 << 20))
    with database.read() as session:
        sizes = [e.size for e in catalog.entries_from(session, stored.manifest_hash, 0, 10_000)]
    assert sum(sizes) == len(data)
    assert all(16 << 10 <= s <= 128 << 10 for s in sizes[:-1])
    assert len(chunk_refcounts(database)) > 20  # far more than the default sizes would give
    with chain.open(stored.manifest_hash) as reader:
        assert reader.read() == data
    chain.close()


@pytest.mark.parametrize(
    "values",
    [
        {"blob_chunk_max": 8 << 20},  # over the single-PUT ceiling
        {"blob_chunk_min": 2 << 20},  # above avg (and pyfastcdc's 1 MiB)
        {"blob_chunk_avg": 8 << 20},  # above max
        {"blob_chunk_min": 10},
    ],
)
def test_impossible_chunk_sizes_are_refused(values: dict[str, int]) -> None:
    with pytest.raises(SettingsError, match=next(iter(values))):
        load_settings(values, env={})


def test_chunk_params_refuse_what_pyfastcdc_cannot_do() -> None:
    with pytest.raises(ValueError, match="max"):
        ChunkParams(256 << 10, 1 << 20, 8 << 20)
    with pytest.raises(ValueError, match="min"):
        ChunkParams(2 << 20, 2 << 20, 4 << 20)

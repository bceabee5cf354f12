"""Store URLs and settings, ``migrate`` (resumable), and the ``oxidav blobs`` commands."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from oxidav.blobs import (
    BlobChain,
    CachedBlobStore,
    EncryptedBlobStore,
    LocalBlobStore,
    RetryingBlobStore,
    store_from_settings,
    store_from_url,
)
from oxidav.blobs.migrate import STATE_FILE, migrate, switch_blob_store_setting
from oxidav.blobs.s3 import S3BlobStore
from oxidav.cli import main
from oxidav.db import Database
from oxidav.db.migrate import upgrade
from oxidav.settings import Settings, load_settings
from tests.support.blobs import B64_KEY_A, pieces, random_bytes

# -- URLs and settings ---------------------------------------------------------------------


def test_store_from_url(tmp_path: Path, moto_endpoint: str) -> None:
    local = store_from_url((tmp_path / "b").as_uri())
    assert isinstance(local, LocalBlobStore) and local.root == tmp_path / "b"
    remote = store_from_url(
        f"s3://bucket/some/prefix?endpoint_url={moto_endpoint}&region=eu-west-1&concurrency=4"
    )
    assert isinstance(remote, RetryingBlobStore)
    assert isinstance(remote.inner, S3BlobStore)
    assert remote.inner.bucket == "bucket" and remote.inner.prefix == "some/prefix"
    assert remote.concurrency == 4
    for bad in ("ftp://x", "s3:///nobucket", "s3://b?colour=red", "file://host/path"):
        with pytest.raises(ValueError):
            store_from_url(bad)


def test_store_from_settings_stack(tmp_path: Path, moto_endpoint: str) -> None:
    settings = Settings(data_dir=tmp_path)
    assert isinstance(store_from_settings(settings), LocalBlobStore)
    encrypted = store_from_settings(settings.replace(encryption_keys=(B64_KEY_A,)))
    assert isinstance(encrypted, EncryptedBlobStore)
    # The cache is for remote stores only.
    cached_local = store_from_settings(settings.replace(blob_cache=str(tmp_path / "c")))
    assert isinstance(cached_local, LocalBlobStore)
    full = store_from_settings(
        settings.replace(
            blob_store=f"s3://b/p?endpoint_url={moto_endpoint}&region=us-east-1",
            blob_cache=str(tmp_path / "c"),
            blob_cache_bytes=1 << 20,
            encryption_keys=(B64_KEY_A,),
        )
    )
    assert isinstance(full, CachedBlobStore) and full.max_bytes == 1 << 20
    assert isinstance(full.inner, EncryptedBlobStore)
    assert isinstance(full.inner.inner, RetryingBlobStore)


def test_switch_setting_keeps_the_rest(tmp_path: Path) -> None:
    config = tmp_path / "oxidav.toml"
    config.write_text('port = 9000\nblob_store = "file:///old"\nlog_level = "DEBUG"\n')
    switch_blob_store_setting(config, "s3://new/bucket?region=x")
    assert config.read_text() == (
        'port = 9000\nblob_store = "s3://new/bucket?region=x"\nlog_level = "DEBUG"\n'
    )
    fresh = tmp_path / "fresh.toml"
    switch_blob_store_setting(fresh, "file:///x")
    assert load_settings(config_file=fresh, env={}).blob_store == "file:///x"


# -- migrate ---------------------------------------------------------------------------------


class FailingTarget(LocalBlobStore):
    """A target that breaks after ``limit`` writes (an interrupted migration)."""

    def __init__(self, root: Path, limit: int) -> None:
        super().__init__(root)
        self.limit = limit

    def put_unsynced(self, key: str, data: bytes) -> None:
        if self.limit <= 0:
            raise OSError("network gone")
        self.limit -= 1
        super().put_unsynced(key, data)

    def sync(self, keys: Sequence[str]) -> None:
        super().sync(keys)


def test_migrate_is_resumable(
    chain: BlobChain, database: Database, local_store: LocalBlobStore, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr("oxidav.blobs.migrate.PAGE", 10)
    contents = [random_bytes(800_000, seed=s) for s in range(40)]
    stored = [chain.ingest(pieces(c)) for c in contents]
    total = len(list(local_store.iter_keys()))
    assert total >= 40
    url = (tmp_path / "target").as_uri()
    flaky = FailingTarget(tmp_path / "target", limit=25)
    with pytest.raises(OSError):
        migrate(database, local_store, flaky, url, tmp_path)
    assert (tmp_path / STATE_FILE).exists()
    target = LocalBlobStore(tmp_path / "target")
    report = migrate(database, local_store, target, url, tmp_path)
    assert report.resumed_after is not None
    assert not report.failed
    assert report.copied + report.skipped == total - 20  # two pages were done before the break
    assert report.skipped == 5  # the half-done page
    assert set(target.iter_keys()) == set(local_store.iter_keys())
    assert not (tmp_path / STATE_FILE).exists()
    moved = BlobChain(database, target)
    for content, s in zip(contents, stored, strict=True):
        with moved.open(s.manifest_hash) as reader:
            assert reader.read() == content


def test_migrate_reports_missing_chunks(
    chain: BlobChain, database: Database, local_store: LocalBlobStore, tmp_path: Path
) -> None:
    chain.ingest(pieces(random_bytes(1_000_000)))
    victim = next(iter(local_store.iter_keys()))
    local_store.delete(victim)
    target = LocalBlobStore(tmp_path / "target")
    report = migrate(database, local_store, target, target.root.as_uri(), tmp_path)
    assert report.failed == [victim]
    assert (tmp_path / STATE_FILE).exists()


# -- the commands ----------------------------------------------------------------------------


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    return data


def _chain_for(data_dir: Path) -> BlobChain:
    settings = load_settings({"data_dir": data_dir}, env={})
    db = Database.from_url(settings.resolved_database_url)
    upgrade(db.engine)
    return BlobChain.from_settings(settings, db)


def test_cli_gc_and_fsck(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chain = _chain_for(data_dir)
    kept = chain.ingest(pieces(random_bytes(2_000_000, seed=1)))
    with chain.db.write() as session:
        chain.incref(session, kept.manifest_hash)
    chain.ingest(pieces(random_bytes(1_000_000, seed=2)))  # never referenced
    assert main(["blobs", "gc", "--data-dir", str(data_dir)]) == 0
    assert "removed 0 manifest(s)" in capsys.readouterr().out
    assert main(["blobs", "gc", "--grace", "0", "--data-dir", str(data_dir)]) == 0
    assert "removed 1 manifest(s)" in capsys.readouterr().out
    assert main(["blobs", "fsck", "--deep", "--data-dir", str(data_dir)]) == 0
    assert capsys.readouterr().out.strip().endswith("clean")
    store = chain.store
    assert isinstance(store, LocalBlobStore)
    store.delete(next(iter(store.iter_keys())))
    assert main(["blobs", "fsck", "--data-dir", str(data_dir)]) == 1
    out = capsys.readouterr().out
    assert "missing chunk" in out and "affected manifest " + kept.manifest_hash in out
    chain.db.dispose()


def test_cli_migrate_switches_the_setting(
    data_dir: Path,
    tmp_path: Path,
    moto_endpoint: str,
    s3_bucket: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    chain = _chain_for(data_dir)
    data = random_bytes(3_000_000, seed=3)
    stored = chain.ingest(pieces(data))
    url = f"s3://{s3_bucket}/moved?endpoint_url={moto_endpoint}&region=us-east-1"
    assert main(["blobs", "migrate", "--to", url, "--data-dir", str(data_dir)]) == 0
    assert "copied" in capsys.readouterr().out
    settings = load_settings({"data_dir": data_dir}, env={})
    assert settings.blob_store == url
    moved = BlobChain.from_settings(settings, chain.db)
    with moved.open(stored.manifest_hash) as reader:
        assert reader.read() == data
    # Migrating to where it already is, is refused.
    assert main(["blobs", "migrate", "--to", url, "--data-dir", str(data_dir)]) == 2
    chain.db.dispose()


def test_the_finishing_pass_catches_up_with_writes_and_gc_during_the_copy(
    chain: BlobChain, database: Database, local_store: LocalBlobStore, tmp_path: Path, monkeypatch
) -> None:
    """What a server does between the copy and the switch — new content (chunks sorting before
    the cursor), and gc collecting a chunk already copied — is caught up by the finishing
    pass: the new content is readable from the target, the stray copy is adopted for gc, and
    fsck of the target is clean."""
    from sqlalchemy import delete

    from oxidav.blobs import migrate as migrate_module
    from oxidav.blobs.fsck import check
    from oxidav.db.models.blobs import BlobChunk, BlobManifest, BlobManifestChunk

    kept = [random_bytes(300_000, seed=s) for s in range(5)]
    kept_stored = [chain.ingest(pieces(c)) for c in kept]
    doomed = chain.ingest(pieces(random_bytes(300_000, seed=99)))  # unreferenced
    late: list[tuple[bytes, str]] = []
    finish = migrate_module._finish_phase

    def server_meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
        body = random_bytes(600_000, seed=7)
        late.append((body, chain.ingest(pieces(body)).manifest_hash))
        with database.write() as session:  # gc collects the doomed content, rows and bytes
            entries = BlobManifestChunk.__table__
            keys = [
                row.chunk_hash
                for row in session.execute(
                    entries.select().where(entries.c.manifest_hash == doomed.manifest_hash)
                )
            ]
            session.execute(delete(entries).where(entries.c.manifest_hash == doomed.manifest_hash))
            session.execute(
                delete(BlobManifest.__table__).where(
                    BlobManifest.__table__.c.hash == doomed.manifest_hash
                )
            )
            session.execute(delete(BlobChunk.__table__).where(BlobChunk.__table__.c.hash.in_(keys)))
        for key in keys:
            local_store.delete(key)
        return finish(*args, **kwargs)

    monkeypatch.setattr(migrate_module, "_finish_phase", server_meanwhile)
    target = LocalBlobStore(tmp_path / "target")
    report = migrate(database, local_store, target, target.root.as_uri(), tmp_path)
    assert not report.failed
    assert report.adopted >= 1  # the doomed chunks copied before gc took them
    moved = BlobChain(database, target)
    for body, stored in [*zip(kept, (s.manifest_hash for s in kept_stored), strict=True), *late]:
        with moved.open(stored) as reader:
            assert reader.read() == body
    assert check(database, target, deep=True).clean


def test_cli_migrate_to_an_unusable_store_is_one_line(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _chain_for(data_dir).db.dispose()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code = main(
        ["blobs", "migrate", "--to", (blocker / "blobs").as_uri(), "--data-dir", str(data_dir)]
    )
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("oxidav: the target store file://")
    assert "is not usable: " in err[0]
    assert load_settings({"data_dir": data_dir}, env={}).blob_store == ""

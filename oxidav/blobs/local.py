"""The local-disk blob store: ``<root>/<first two hex>/<key>``, atomic writes, batched fsync.

The 256 shard folders are created once when the store opens. A write creates an unnamed file in
its shard folder (``O_TMPFILE``), fills it and then links it under its key, so a reader never sees
a partial blob and a crash mid-write leaves nothing behind (the unnamed inode is freed). Where
``O_TMPFILE`` is not available, and to replace an existing key, the write goes to a temporary file
in ``<root>/.tmp`` that is renamed into place. ``put`` fsyncs the file and its shard folder;
``put_unsynced`` does neither but starts the file's writeback (``sync_file_range``, Linux), and
``sync`` later fsyncs a whole batch of files and then each touched shard folder once (the sweep
an ingest ends with), mostly waiting for writes already under way. Blob files are created
``FILE_MODE`` (0600) and the folders ``FOLDER_MODE`` (0700).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import io
import os
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import cast

from oxidav.blobs.regions import FileRegion
from oxidav.blobs.store import (
    READ_BLOCK,
    BlobNotFoundError,
    BlobStoreError,
    check_key,
    check_range,
    shard_of,
)

TMP_DIR = ".tmp"
#: Temporary files older than this are leftovers of a crashed writer and removed at open.
STALE_TMP_SECONDS = 24 * 3600
#: ``sync`` of at least this many keys fsyncs from ``SYNC_THREADS`` threads.
SYNC_PARALLEL_MIN = 16
SYNC_THREADS = 8
_HEX = "0123456789abcdef"
SHARDS = tuple(a + b for a in _HEX for b in _HEX)
#: Blob files and the folders this store creates are private to the server's user (file
#: contents are the users' data; a stricter umask narrows them further).
FILE_MODE = 0o600
FOLDER_MODE = 0o700


def _fsync_path(path: str | Path, directory: bool = False) -> None:
    flags = os.O_RDONLY | (os.O_DIRECTORY if directory else 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _load_sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """Linux ``sync_file_range(2)`` through ctypes (the os module lacks it), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    function.restype = ctypes.c_int
    return cast(Callable[[int, int, int, int], int], function)


_sync_file_range = _load_sync_file_range()
_SYNC_FILE_RANGE_WRITE = 2
#: ``put_unsynced`` starts the writeback of blobs at least this large; a small one costs less
#: to write in the sweep (a small PUT syncs its one chunk right away anyway).
WRITEBACK_MIN = 256 * 1024


def _start_writeback(fd: int, size: int) -> None:
    """Start writing the file's dirty pages to the disk, without waiting (a hint, errors
    ignored): the sync sweep's fsync then finds them written or on their way, instead of
    writing every byte of the sweep at once — most of an ingest's final sweep."""
    if _sync_file_range is not None and size >= WRITEBACK_MIN:
        _sync_file_range(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class LocalBlobStore:
    """Blobs as files under ``root``. Several processes may share one root: every write names
    a private, complete file (a link of an unnamed file, or a rename of a temporary one), and
    re-writing a key is harmless."""

    concurrency = 1

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._tmp = self.root / TMP_DIR
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._root_fd: int | None = None
        # Cleared the first time the file system refuses an O_TMPFILE write.
        self._unnamed_writes = hasattr(os, "O_TMPFILE")
        self._make_layout()

    def __repr__(self) -> str:
        return f"LocalBlobStore({str(self.root)!r})"

    def _make_layout(self) -> None:
        self.root.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        self._tmp.mkdir(mode=FOLDER_MODE, exist_ok=True)
        if not (self.root / SHARDS[-1]).is_dir():
            for shard in SHARDS:
                (self.root / shard).mkdir(mode=FOLDER_MODE, exist_ok=True)
        self._remove_stale_tmp()

    def _remove_stale_tmp(self) -> None:
        cutoff = time.time() - STALE_TMP_SECONDS
        with os.scandir(self._tmp) as entries:
            for entry in entries:
                with contextlib.suppress(FileNotFoundError):
                    if entry.stat().st_mtime < cutoff:
                        os.unlink(entry.path)

    def path(self, key: str) -> Path:
        """Where ``key`` lives on disk."""
        return Path(self._file(key))

    # -- writing -------------------------------------------------------------------------

    def _dir_fd(self) -> int:
        """A descriptor of ``root``: writes and syncs resolve ``<shard>/<key>`` against it."""
        fd = self._root_fd
        if fd is None:
            with self._lock:
                if self._root_fd is None:
                    self._root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
                fd = self._root_fd
        return fd

    def _write(self, key: str, data: bytes, durable: bool) -> None:
        check_key(key)
        if self._unnamed_writes and self._write_unnamed(key, data, durable):
            return
        self._write_renamed(key, data, durable)

    def _write_unnamed(self, key: str, data: bytes, durable: bool) -> bool:
        """Write ``data`` into an unnamed file of the shard folder, then link it as ``key``:
        one inode, no temporary name, no rename. Returns False, having made no name, when the
        key already exists (a re-write replaces it, see ``_write_renamed``) or the file system
        cannot do it."""
        root = self._dir_fd()
        shard = shard_of(key)
        try:
            fd = os.open(shard, os.O_TMPFILE | os.O_WRONLY, FILE_MODE, dir_fd=root)
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                self._unnamed_writes = False
                return False
            raise
        try:
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
            else:
                _start_writeback(fd, len(data))
            # linkat(AT_SYMLINK_FOLLOW) on /proc/self/fd/N gives the unnamed inode its name
            # (a dir_fd makes CPython call linkat, which honours follow_symlinks).
            os.link(f"/proc/self/fd/{fd}", f"{shard}/{key}", dst_dir_fd=root, follow_symlinks=True)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.EXDEV, errno.EPERM, errno.EOPNOTSUPP):
                self._unnamed_writes = False  # no /proc, or links refused: rename from now on
                return False
            raise
        finally:
            os.close(fd)
        if durable:
            _fsync_path(self.root / shard, directory=True)
        return True

    def _write_renamed(self, key: str, data: bytes, durable: bool) -> None:
        """Write ``data`` under a temporary name, then rename it over ``key``. A key that
        already exists is only ever replaced by bytes already on disk, unsynced put or not:
        another ingest of the same chunk may have synced the file now at that name and be
        about to commit a manifest that relies on it, and its sync sweep is over — a rename to
        unsynced bytes would leave that manifest pointing at data a crash can lose. With unnamed
        writes this path only runs for a key that exists; without, the name is looked up."""
        final = self.path(key)
        tmp = self._tmp / f"{key}.{secrets.token_hex(6)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        try:
            try:
                _write_all(fd, data)
                if durable or self._unnamed_writes or os.path.lexists(final):
                    os.fsync(fd)
                else:
                    _start_writeback(fd, len(data))
            finally:
                os.close(fd)
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        if durable:
            _fsync_path(final.parent, directory=True)

    def put(self, key: str, data: bytes) -> None:
        self._write(key, data, durable=True)

    def put_unsynced(self, key: str, data: bytes) -> None:
        self._write(key, data, durable=False)

    def sync(self, keys: Sequence[str]) -> None:
        """fsync every file of ``keys``, then every shard folder they live in, once each.

        A large batch is fsynced from several threads: the file system then commits many of
        those fsyncs in one journal transaction instead of one transaction each."""
        names = [f"{shard_of(key)}/{key}" for key in keys if check_key(key)]
        shards = sorted({shard_of(key) for key in keys})
        if len(names) < SYNC_PARALLEL_MIN:
            self._fsync_all(names, shards)
            return
        # One task per thread, each a slice of the batch: a future per file costs more than a
        # fsync of a file already on disk. Folders only after every file of the batch.
        pool = self._sync_pool()
        threads = min(SYNC_THREADS, len(names))
        list(pool.map(lambda i: self._fsync_all(names[i::threads], []), range(threads)))
        threads = min(SYNC_THREADS, len(shards))
        list(pool.map(lambda i: self._fsync_all([], shards[i::threads]), range(threads)))

    def _fsync_all(self, names: Sequence[str], folders: Sequence[str]) -> None:
        """fsync the files ``names`` and then the folders ``folders`` (both relative to the
        root). A missing file raises ``BlobNotFoundError``."""
        root = self._dir_fd()
        for name in names:
            try:
                fd = os.open(name, os.O_RDONLY, dir_fd=root)
            except FileNotFoundError:
                raise BlobNotFoundError(name.rpartition("/")[2]) from None
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        for folder in folders:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY, dir_fd=root)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _sync_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(SYNC_THREADS, thread_name_prefix="oxidav-fsync")
            return self._pool

    # -- reading -------------------------------------------------------------------------

    @functools.cached_property
    def _prefix(self) -> str:
        """``root`` as a string ending in a separator: the read path names files by string
        concatenation (building a ``Path`` per read costs more than the read of 64 KiB)."""
        return os.path.join(self.root, "")

    def _file(self, key: str) -> str:
        """Where ``key`` lives on disk, as a string (``path`` wraps it in a ``Path``)."""
        check_key(key)
        return f"{self._prefix}{shard_of(key)}/{key}"

    def get(self, key: str) -> bytes:
        try:
            with io.FileIO(self._file(key), "rb") as fh:
                return fh.readall()
        except FileNotFoundError:
            raise BlobNotFoundError(key) from None

    def get_range(self, key: str, start: int, end: int, block: int = READ_BLOCK) -> Iterator[bytes]:
        check_range(start, end)
        name = self._file(key)
        if end - start <= block:
            return iter(self._read_at(key, name, start, end - start))
        try:
            fh = io.FileIO(name, "rb")
        except FileNotFoundError:
            raise BlobNotFoundError(key) from None
        return self._iter_file(fh, start, end, block)

    def region(self, key: str) -> FileRegion:
        """The whole blob ``key`` as an open ``FileRegion`` (checked through its file and sent
        with ``sendfile`` by the HTTP server: no copy of the answer through the process)."""
        try:
            return FileRegion.open(self._file(key))
        except FileNotFoundError:
            raise BlobNotFoundError(key) from None

    @staticmethod
    def _read_at(key: str, name: str, start: int, length: int) -> list[bytes]:
        """Up to ``length`` bytes (at most one block) at ``start``, read at once with
        positioned reads: a small range (a Range GET's part of a chunk) costs one open, one
        ``pread`` and one close, and no descriptor waits in a suspended generator."""
        try:
            fd = os.open(name, os.O_RDONLY)
        except FileNotFoundError:
            raise BlobNotFoundError(key) from None
        try:
            pieces: list[bytes] = []
            while length > 0:
                piece = os.pread(fd, length, start)
                if not piece:
                    break
                pieces.append(piece)
                start += len(piece)
                length -= len(piece)
            return pieces
        finally:
            os.close(fd)

    @staticmethod
    def _iter_file(fh: io.FileIO, start: int, end: int, block: int) -> Iterator[bytes]:
        with fh:
            fh.seek(start)
            remaining = end - start
            while remaining > 0:
                piece = fh.read(min(block, remaining))
                if not piece:
                    return
                remaining -= len(piece)
                yield piece

    def exists(self, key: str) -> bool:
        return self.path(key).is_file()

    def size(self, key: str) -> int:
        try:
            return self.path(key).stat().st_size
        except FileNotFoundError:
            raise BlobNotFoundError(key) from None

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path(key))

    def iter_keys(self) -> Iterator[str]:
        for shard in SHARDS:
            try:
                entries = os.scandir(self.root / shard)
            except FileNotFoundError:
                continue
            with entries:
                for entry in entries:
                    if entry.name.startswith(shard) and entry.is_file():
                        yield entry.name

    def health_check(self) -> None:
        probe = self._tmp / f"health.{secrets.token_hex(6)}"
        try:
            probe.write_bytes(b"ok")
            ok = probe.read_bytes() == b"ok"
            probe.unlink()
        except OSError as exc:
            raise BlobStoreError(f"local blob store {self.root} is not usable: {exc}") from exc
        if not ok or not all((self.root / s).is_dir() for s in (SHARDS[0], SHARDS[-1])):
            raise BlobStoreError(f"local blob store {self.root} is not usable")

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
            fd, self._root_fd = self._root_fd, None
        if pool is not None:
            pool.shutdown(wait=True)
        if fd is not None:
            os.close(fd)


__all__ = ["SHARDS", "LocalBlobStore"]

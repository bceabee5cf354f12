"""The local side: walk a tree, and read each file once to hash, chunk and (small files) keep
its content.

Invariants: paths are ``/``-separated, relative to the root, starting with ``/``; symbolic
links and special files are never followed or sent (listed as skipped); a name that is not
UTF-8 is skipped with its reason. Chunks are cut exactly as the server cuts them (FastCDC 2020
with the advertised parameters, BLAKE3 names), so equal content deduplicates either way.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import blake3
from pyfastcdc import FastCDC

EMPTY_HASH = blake3.blake3(b"").hexdigest()


@dataclass(frozen=True)
class ChunkParams:
    min_size: int
    avg_size: int
    max_size: int


@dataclass(frozen=True)
class LocalFile:
    rel: str
    path: Path
    size: int
    mtime_ns: int


@dataclass
class LocalTree:
    folders: list[str] = field(default_factory=list)
    files: list[LocalFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _rel(root: Path, path: Path) -> str | None:
    rel = "/" + path.relative_to(root).as_posix()
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return rel


def scan(root: Path) -> LocalTree:
    """Every folder and regular file below ``root``, in a stable order (parents first)."""
    tree = LocalTree()
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(directory)
        dirnames.sort()
        kept = []
        for name in dirnames:
            path = here / name
            rel = _rel(root, path)
            if rel is None:
                tree.skipped.append((repr(str(path)), "the name is not UTF-8"))
            elif path.is_symlink():
                tree.skipped.append((rel, "a symbolic link"))
            else:
                tree.folders.append(rel)
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            path = here / name
            rel = _rel(root, path)
            if rel is None:
                tree.skipped.append((repr(str(path)), "the name is not UTF-8"))
                continue
            try:
                info = path.lstat()
            except OSError as exc:
                tree.skipped.append((rel, f"cannot stat: {exc.strerror}"))
                continue
            if not stat.S_ISREG(info.st_mode):
                tree.skipped.append((rel, "not a regular file"))
                continue
            tree.files.append(LocalFile(rel, path, info.st_size, info.st_mtime_ns))
    return tree


@dataclass(frozen=True)
class ChunkRef:
    hash: str
    offset: int
    size: int


@dataclass
class HashedFile:
    """A file read once: its content hash, and either its bytes (``data``, small files) or
    its chunks (``chunks``; their bytes are read again only for chunks the server lacks)."""

    file: LocalFile
    size: int
    content_hash: str
    data: bytes | None
    chunks: list[ChunkRef]


class FileChanged(Exception):
    """The file changed while it was being pushed (its chunk no longer hashes the same)."""


def hash_file(file: LocalFile, params: ChunkParams, inline_max: int) -> HashedFile:
    """Read ``file`` once. Raises ``OSError`` when it cannot be read."""
    with open(file.path, "rb") as handle:
        if file.size <= inline_max:
            data = handle.read(inline_max + 1)
            if len(data) <= inline_max:
                return HashedFile(file, len(data), blake3.blake3(data).hexdigest(), data, [])
            handle.seek(0)
        content = blake3.blake3()
        chunks: list[ChunkRef] = []
        cdc = FastCDC(params.avg_size, min_size=params.min_size, max_size=params.max_size)
        size = 0
        for piece in cdc.cut_stream(handle):
            data_view = piece.data
            content.update(data_view)
            chunks.append(ChunkRef(blake3.blake3(data_view).hexdigest(), size, piece.length))
            size += piece.length
    return HashedFile(file, size, content.hexdigest(), None, chunks)


def read_chunk(file: LocalFile, ref: ChunkRef) -> bytes:
    """The bytes of ``ref``, read again; ``FileChanged`` unless they still hash the same."""
    with open(file.path, "rb") as handle:
        handle.seek(ref.offset)
        data = handle.read(ref.size)
    if len(data) != ref.size or blake3.blake3(data).hexdigest() != ref.hash:
        raise FileChanged(file.rel)
    return data


def batches(files: list[LocalFile], max_files: int, max_bytes: int) -> Iterator[list[LocalFile]]:
    """``files`` in order, cut into batches of at most ``max_files`` files and about
    ``max_bytes`` bytes (a larger file is a batch of its own): linear in the number of files."""
    batch: list[LocalFile] = []
    size = 0
    for file in files:
        if batch and (len(batch) >= max_files or size + file.size > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(file)
        size += file.size
    if batch:
        yield batch

"""The push protocol's wire format and bounds (docs/push-protocol.md): URLs, limits, the chunk
frames of a ``chunks`` request and the JSON of ``need`` and ``commit``.

Invariants: every read is bounded before it is made (``MAX_*``); a malformed body raises
``PushError`` with a 4xx status and a reason, nothing having been stored or written.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from oxidav.urls import DAV_ROOT

VERSION = 1
PUSH_ROOT = f"{DAV_ROOT}/push/v{VERSION}"
#: Hashes a ``need`` request may name.
MAX_NEED = 10_000
#: Body of a ``chunks`` request (frames included).
MAX_CHUNKS_BODY = 24 << 20
#: Body of a ``commit`` request (JSON, inline contents base64-encoded).
MAX_COMMIT_BODY = 16 << 20
#: Files and folders one commit may name.
MAX_COMMIT_ENTRIES = 5_000
#: Chunks one file of a commit may name (4 TiB at the largest chunk size).
MAX_FILE_CHUNKS = 1 << 20
#: A frame: the chunk's 32-byte BLAKE3 digest, then its length (unsigned 32-bit big-endian).
FRAME_HEAD = struct.Struct(">32sI")

_HEX64 = re.compile(r"[0-9a-f]{64}")


class PushError(Exception):
    """A request the protocol refuses as a whole: ``status`` (4xx) and the reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def is_chunk_hash(value: object) -> bool:
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def iter_frames(body: bytes, max_chunk: int) -> Iterator[tuple[str, memoryview]]:
    """The ``(hash, bytes)`` frames of a ``chunks`` body; ``PushError`` (400) if the body ends
    inside a frame or a frame is longer than ``max_chunk``."""
    view = memoryview(body)
    offset = 0
    while offset < len(view):
        if len(view) - offset < FRAME_HEAD.size:
            raise PushError(400, "the body ends inside a frame head")
        digest, length = FRAME_HEAD.unpack_from(view, offset)
        offset += FRAME_HEAD.size
        if length == 0 or length > max_chunk:
            raise PushError(400, f"a chunk of {length} bytes (1 to {max_chunk} allowed)")
        if len(view) - offset < length:
            raise PushError(400, "the body ends inside a chunk")
        yield digest.hex(), view[offset : offset + length]
        offset += length


def load_json(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PushError(400, f"the body is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise PushError(400, "the body is not a JSON object")
    return document


def need_hashes(document: dict[str, Any]) -> list[str]:
    hashes = document.get("chunks")
    if not isinstance(hashes, list) or not all(is_chunk_hash(h) for h in hashes):
        raise PushError(400, '"chunks" must be a list of lower-case hex BLAKE3 hashes')
    if len(hashes) > MAX_NEED:
        raise PushError(400, f"at most {MAX_NEED} hashes per request")
    return list(dict.fromkeys(hashes))


@dataclass(frozen=True)
class FileEntry:
    """One file of a commit as the client sent it (``path`` not yet validated)."""

    path: str
    size: int
    mtime: float | None
    chunks: list[str] | None  # None: the content is ``data``
    data: bytes | None
    if_match: str | None
    if_none_match: bool


def _file_entry(raw: object) -> FileEntry:
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
        raise PushError(400, 'each file needs a "path" string')
    size = raw.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise PushError(400, f'{raw["path"]!r}: "size" must be a non-negative integer')
    mtime = raw.get("mtime")
    if mtime is not None and (not isinstance(mtime, int | float) or isinstance(mtime, bool)):
        raise PushError(400, f'{raw["path"]!r}: "mtime" must be a number of seconds')
    chunks = raw.get("chunks")
    data = raw.get("data")
    if (chunks is None) == (data is None):
        raise PushError(400, f'{raw["path"]!r}: give either "chunks" or "data"')
    content: bytes | None = None
    if chunks is not None:
        if not isinstance(chunks, list) or not all(is_chunk_hash(h) for h in chunks):
            raise PushError(400, f'{raw["path"]!r}: "chunks" must be hex BLAKE3 hashes')
        if len(chunks) > MAX_FILE_CHUNKS:
            raise PushError(400, f"{raw['path']!r}: too many chunks")
    else:
        if not isinstance(data, str):
            raise PushError(400, f'{raw["path"]!r}: "data" must be base64 text')
        try:
            content = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise PushError(400, f'{raw["path"]!r}: "data" is not base64') from None
        if len(content) != size:
            raise PushError(400, f"{raw['path']!r}: {len(content)} bytes of data, size {size}")
    if_match = raw.get("if_match")
    if if_match is not None and not isinstance(if_match, str):
        raise PushError(400, f'{raw["path"]!r}: "if_match" must be an entity tag')
    return FileEntry(
        path=raw["path"],
        size=size,
        mtime=float(mtime) if mtime is not None else None,
        chunks=list(chunks) if chunks is not None else None,
        data=content,
        if_match=if_match.strip('"') if if_match else None,
        if_none_match=raw.get("if_none_match") is True,
    )


def commit_entries(document: dict[str, Any]) -> tuple[list[str], list[FileEntry]]:
    """The folders and files of a ``commit`` body; ``PushError`` (400) if malformed."""
    folders = document.get("folders", [])
    files = document.get("files", [])
    if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
        raise PushError(400, '"folders" must be a list of paths')
    if not isinstance(files, list):
        raise PushError(400, '"files" must be a list')
    if len(folders) + len(files) > MAX_COMMIT_ENTRIES:
        raise PushError(400, f"at most {MAX_COMMIT_ENTRIES} folders and files per commit")
    return list(folders), [_file_entry(raw) for raw in files]

"""A folder as a streamed ZIP archive: the "download all" of a public folder link.

The archive is produced while it is sent: ``zipfile`` writes to a non-seekable sink (each entry
then carries a data descriptor, ZIP64 where needed), and the sink is drained after every
piece, so memory stays flat whatever the folder's size. Entries are stored, not compressed:
most large files are compressed already, and the server's CPU is better spent elsewhere.
File contents come from the blob chain one piece at a time; the listing is taken once, when
the download starts (a file trashed meanwhile is still sent as it was).
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Sequence
from datetime import datetime

from oxidav.blobs import BlobChain
from oxidav.tree.types import NodeInfo

#: Bytes read from the blob chain per piece.
PIECE_BYTES = 1 << 20
#: ZIP cannot store times before 1980.
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


class _Sink:
    """A write-only, non-seekable file object whose bytes are taken out by ``drain``."""

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self._written = 0

    def write(self, data: bytes, /) -> int:
        self._pieces.append(bytes(data))
        self._written += len(data)
        return len(data)

    def tell(self) -> int:
        return self._written

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def drain(self) -> bytes:
        data = b"".join(self._pieces)
        self._pieces.clear()
        return data


def _date_time(mtime: datetime) -> tuple[int, int, int, int, int, int]:
    stamp = mtime.timetuple()[:6]
    return max(stamp, _ZIP_EPOCH)


def zip_folder(chain: BlobChain, root: str, nodes: Sequence[NodeInfo]) -> Iterator[bytes]:
    """The ZIP archive of ``nodes`` (a folder's subtree, folders before their members, all
    below the tree path ``root``), as an iterator of byte pieces."""
    sink = _Sink()
    with zipfile.ZipFile(sink, mode="w", compression=zipfile.ZIP_STORED) as archive:
        for node in nodes:
            name = node.path[len(root) :].lstrip("/")
            if not name:
                continue
            if node.is_folder:
                info = zipfile.ZipInfo(name + "/", _date_time(node.mtime))
                info.external_attr = 0o40755 << 16
                archive.writestr(info, b"")
            else:
                info = zipfile.ZipInfo(name, _date_time(node.mtime))
                info.external_attr = 0o100644 << 16
                info.file_size = node.size
                with archive.open(info, mode="w", force_zip64=True) as entry:
                    if node.manifest_hash is not None:
                        with chain.open(node.manifest_hash, node.size) as reader:
                            while piece := reader.read(PIECE_BYTES):
                                entry.write(piece)
                                yield sink.drain()
            yield sink.drain()
    yield sink.drain()

"""cheroot connections whose responses go straight to the socket (``DirectWriteConnection``).

cheroot writes responses through ``cheroot.makefile.BufferedWriter``, a ``_pyio`` writer that
appends every piece to a ``bytearray``, copies that to ``bytes`` for ``send`` and shifts down
what the socket did not take: each byte of a large GET was copied three or more times in
Python before the kernel's own copy (``perf``: 8 % of a 512 MiB GET in ``memmove`` alone).
``SocketWriter`` hands each piece to ``socket.sendall`` as it is; it buffers nothing, so there
is nothing to flush, and counts ``bytes_written`` as cheroot's statistics expect.

Only plain-TCP connections get it: a TLS adapter brings its own ``makefile`` and keeps it.
"""

from __future__ import annotations

import socket
from typing import Any

from cheroot.makefile import MakeFile
from cheroot.server import HTTPConnection


class SocketWriter:
    """The write side of a connection: every ``write`` is one ``sendall``."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.bytes_written = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self._sock.sendall(data)
        size = len(data)
        self.bytes_written += size
        return size

    def flush(self) -> None:
        """Nothing is buffered."""

    def close(self) -> None:
        """The connection closes the socket."""


class DirectWriteConnection(HTTPConnection):
    """cheroot's ``HTTPConnection`` with a ``SocketWriter`` on plain TCP."""

    def __init__(self, server: Any, sock: socket.socket, makefile: Any = MakeFile) -> None:
        super().__init__(server, sock, makefile)
        if makefile is MakeFile:
            self.wfile = SocketWriter(sock)


__all__ = ["DirectWriteConnection", "SocketWriter"]

"""The front: connections wait for a whole request head here, not in a worker thread.

cheroot hands a connection to a worker thread as soon as its socket is readable; the worker
then blocks reading the request head, restarting the socket timeout at every byte, so a few
dozen clients that send half a head and stop hold every worker and nobody else is answered.

``FrontConnectionManager`` (cheroot's ``ConnectionManager``, in its selector thread) receives
what a plain-TCP connection sends into the connection's ``SocketReader`` buffer and queues the
connection for a worker only once the head's closing empty line is buffered, so parsing the head
never waits on the client. Meanwhile the connection stays in the selector and costs a socket and
a buffer of at most ``max_request_head_bytes`` plus one receive:

- a head not complete within ``request_head_timeout`` of the accept (or of the first byte of a
  kept-alive connection's next request) is answered 408 and the connection closed;
- a head larger than ``max_request_head_bytes`` is answered 431 and the connection closed,
  without reading the rest.

A connection whose answer went out before its request body was read (a 401, a refused upload)
lingers here after the answer, its write side shut: what the client still sends is received and
thrown away, without a worker and without buffering it, until the client closes, stops sending
for ``LINGER_IDLE_SECONDS`` or ``LINGER_SECONDS`` have passed (nginx's lingering close). The
client, which may still be sending its body, then reads the answer instead of a reset.

Idle kept-alive connections expire after the server's ``timeout`` as in cheroot, and only they
count against cheroot's ``keep_alive_conn_limit`` (connections still sending a head do not).

With TLS (``tls_cert``; ``FrontServer.ssl_adapter`` set) the front also does the handshake:
cheroot does it in this thread with a blocking socket, so one client sending half a ClientHello
stopped every accept for the server's ``timeout``. Here a new connection is wrapped without
handshaking (``TlsHandshake``) and waits in the selector, non-blocking, until its handshake is
done (within ``request_head_timeout`` of the accept, else closed); then it is a connection like
a plain one, its ``SocketReader`` reading plaintext from the ``ssl.SSLSocket``. While in the
selector a TLS socket is non-blocking (a readable socket may hold half a TLS record) and it
gets its timeout back when it goes to a worker; plaintext OpenSSL holds already decrypted
(``pending``) counts as readable.

Under a supervisor's workers (``FrontServer.connection_share``) the front counts the connections
its process holds, from the accept (before any TLS handshake) to the close, and a worker holding
more than a sibling leaves a new connection to it (``oxidav.connection_shares``): the listening
socket is out of the selector for ``ACCEPT_RECHECK_SECONDS``, up to ``ACCEPT_DEFERRALS`` times
in a row while a connection still waits.

Invariant: a ``SocketReader`` connection reaches a worker only with a complete head buffered
(``DirectSocketConnection`` keeps it when it serves a kept-alive connection's next request
itself).
"""

from __future__ import annotations

import logging
import math
import select
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from cheroot import wsgi
from cheroot.connections import ConnectionManager
from cheroot.workers.threadpool import ThreadPool

from oxidav.connection_shares import ACCEPT_DEFERRALS, ACCEPT_RECHECK_SECONDS, WorkerShare
from oxidav.http_reader import HeadState, SocketReader, tls_pending

log = logging.getLogger("oxidav.http_front")

#: The longest a connection lingers after its answer, discarding an unread body.
LINGER_SECONDS = 30.0
#: A lingering connection closes once the client has sent nothing for this long.
LINGER_IDLE_SECONDS = 5.0
#: At most this many connections linger at once; past it a connection closes at once.
LINGER_MAX_CONNECTIONS = 1024

HEAD_TOO_LARGE = ("431 Request Header Fields Too Large", "request head too large")
HEAD_TOO_SLOW = ("408 Request Timeout", "request head not complete in time")


class TlsHandshake:
    """A TLS connection accepted but not yet through its handshake (in the selector)."""

    def __init__(self, sock: ssl.SSLSocket, addr: Any, deadline: float) -> None:
        self.socket = sock
        self.addr = addr
        self.head_deadline = deadline
        self.last_used = time.time()
        #: Called once when the connection closes (its worker's count); handed on with it.
        self.release_share: Callable[[], None] | None = None

    def close(self) -> None:
        release, self.release_share = self.release_share, None
        try:
            self.socket.close()
        finally:
            if release is not None:
                release()


def _refusal(status: str, reason: str) -> bytes:
    body = reason.encode("ascii") + b"\n"
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii") + body


class FrontConnectionManager(ConnectionManager):
    """cheroot's ``ConnectionManager`` that queues a plain-TCP connection for a worker only
    once its request head is buffered."""

    # cheroot's own, which its type stubs leave out.
    _selector: Any
    _stop_requested: bool
    _remove_invalid_sockets: Callable[[], None]
    _from_server_socket: Callable[[socket.socket], Any]

    def __init__(self, server: Any, head_timeout: float, max_head_bytes: int) -> None:
        super().__init__(server)
        self._head_timeout = head_timeout
        self._max_head_bytes = max_head_bytes
        self._heads_lock = threading.Lock()
        #: Connections in the selector with a head deadline (a head is under way).
        self._heads_waiting = 0
        #: Connections in the selector discarding an unread body before they close.
        self._lingering = 0
        #: Where lingering connections' bytes are received and dropped (selector thread only).
        self._discard_buffer = bytearray(64 * 1024)
        #: This worker's count among its siblings (None: the only process serving the socket).
        self._share: WorkerShare | None = getattr(server, "connection_share", None)
        #: While the listening socket is out of the selector (a sibling holds fewer
        #: connections), when it goes back in (``time.monotonic``).
        self._accept_deferred_until: float | None = None
        #: Deferrals in a row that found a connection still waiting afterwards.
        self._deferrals = 0
        #: The next select is the first after a deferral.
        self._rechecking = False

    # --- the lingering close --------------------------------------------------------------

    def linger(self, conn: Any) -> bool:
        """Keep ``conn`` (answered, write side shut) in the selector discarding what the
        client still sends, then close it; False when too many linger already (close it)."""
        with self._heads_lock:
            if self._lingering >= LINGER_MAX_CONNECTIONS:
                return False
            self._lingering += 1
        now = time.time()
        conn.linger_deadline = now + LINGER_SECONDS
        conn.last_used = now
        try:
            self._watch(conn)
        except (OSError, ValueError, KeyError):
            self._end_linger(conn)
            return False
        return True

    def _end_linger(self, conn: Any) -> None:
        conn.linger_deadline = None
        with self._heads_lock:
            self._lingering -= 1
        with suppress(OSError):
            conn.close()

    def _discard(self, sock_fd: int, conn: Any) -> None:
        try:
            received = conn.socket.recv_into(self._discard_buffer)
        except BlockingIOError:
            return
        except OSError:
            received = 0
        if received:
            conn.last_used = time.time()
            return
        self._selector.unregister(sock_fd)
        self._end_linger(conn)

    # --- the TLS handshake -----------------------------------------------------------------

    def _accept_tls(self, adapter: Any) -> None:
        """Accept a connection and start its TLS handshake in the selector."""
        try:
            sock, addr = self.server.socket.accept()
        except OSError:
            return  # another thread took it, or the listening socket is closing
        if self.server.stats["Enabled"]:
            self.server.stats["Accepts"] += 1
        try:
            sock.set_inheritable(False)
            sock.setblocking(False)
            wrapped = adapter.context.wrap_socket(
                sock, server_side=True, do_handshake_on_connect=False
            )
        except OSError:
            sock.close()
            return
        handshake = TlsHandshake(wrapped, addr, time.time() + self._head_timeout)
        if self._share is not None:
            self._share.opened()
            handshake.release_share = self._share.closed
        with self._heads_lock:
            self._heads_waiting += 1
        try:
            self._selector.register(wrapped.fileno(), selectors.EVENT_READ, data=handshake)
        except (OSError, ValueError, KeyError):
            self._end_handshake(handshake)

    def _end_handshake(self, handshake: TlsHandshake) -> None:
        handshake.head_deadline = None  # type: ignore[assignment]
        with self._heads_lock:
            self._heads_waiting -= 1
        with suppress(OSError):
            handshake.close()

    def _handshake_step(self, sock_fd: int, handshake: TlsHandshake) -> None:
        sock = handshake.socket
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            handshake.last_used = time.time()
            return
        except (ssl.SSLError, OSError) as exc:
            self._selector.unregister(sock_fd)
            if isinstance(exc, ssl.SSLError) and exc.reason == "HTTP_REQUEST":
                # Plain HTTP to the TLS port: say so, in plain HTTP, without waiting.
                log.info("%s: plain HTTP on the TLS port", handshake.addr)
                with suppress(OSError):
                    socket.socket.send(sock, _refusal("400 Bad Request", "this port speaks HTTPS"))
            else:
                log.debug("%s: TLS handshake failed: %s", handshake.addr, exc)
            self._end_handshake(handshake)
            return
        self._selector.unregister(sock_fd)
        with self._heads_lock:
            self._heads_waiting -= 1
        server = self.server
        try:
            ssl_env = server.ssl_adapter.get_environ(sock)
            conn = server.ConnectionClass(server, sock)
        except OSError:
            with suppress(OSError):
                handshake.close()
            return
        conn.release_share, handshake.release_share = handshake.release_share, None
        conn.ssl_env = ssl_env
        conn.remote_addr, conn.remote_port = handshake.addr[:2]
        self._admit(conn)

    # --- the head phase -------------------------------------------------------------------

    def _start_head(self, conn: Any, now: float) -> None:
        if getattr(conn, "head_deadline", None) is None:
            with self._heads_lock:
                self._heads_waiting += 1
        conn.head_deadline = now + self._head_timeout

    def _end_head(self, conn: Any) -> None:
        if getattr(conn, "head_deadline", None) is not None:
            conn.head_deadline = None
            with self._heads_lock:
                self._heads_waiting -= 1

    def _refuse(self, conn: Any, refusal: tuple[str, str]) -> None:
        """Answer ``refusal`` (status, reason) without waiting on the client, and close the
        connection."""
        status, reason = refusal
        log.info("%s:%s %s: %s", conn.remote_addr, conn.remote_port, status[:3], reason)
        with suppress(OSError):
            # Never wait: a client that reads nothing must not stall the selector thread.
            conn.socket.setblocking(False)
            conn.socket.send(_refusal(status, reason))
        with suppress(OSError):
            conn.close()

    def _watch(self, conn: Any) -> None:
        if isinstance(conn.socket, ssl.SSLSocket):
            conn.socket.settimeout(0)  # a readable TLS socket may hold half a record
        self._selector.register(conn.socket.fileno(), selectors.EVENT_READ, data=conn)

    def _to_worker(self, conn: Any) -> None:
        if isinstance(conn.socket, ssl.SSLSocket):
            conn.socket.settimeout(self.server.timeout)
        self.server.process_conn(conn)

    def put(self, conn: Any) -> None:
        """A kept-alive connection back from a worker: to a worker again if its next head is
        buffered, else into the selector (with a head deadline if part of a head is here)."""
        if self._stop_requested:
            with suppress(OSError):
                conn.close()
            return
        reader = conn.rfile
        if not isinstance(reader, SocketReader):
            super().put(conn)
            return
        now = time.time()
        conn.last_used = now
        if tls_pending(conn.socket):
            conn.socket.settimeout(0)
            state = reader.receive_head(self._max_head_bytes)
        else:
            state = reader.head_state(self._max_head_bytes)
        if state is HeadState.COMPLETE:
            self._to_worker(conn)
        elif state is HeadState.TOO_LARGE:
            self._refuse(conn, HEAD_TOO_LARGE)
        else:
            if state is HeadState.PARTIAL:
                self._start_head(conn, now)
            self._watch(conn)

    def _admit(self, conn: Any) -> None:
        """A new connection: to a worker if its head is here already (the listening socket
        defers the accept until the client has sent something), else into the selector until
        it is (plain TCP)."""
        reader = conn.rfile
        if not isinstance(reader, SocketReader):
            self.server.process_conn(conn)
            return
        now = time.time()
        conn.last_used = now
        if isinstance(conn.socket, ssl.SSLSocket):
            conn.socket.settimeout(0)
        if tls_pending(conn.socket) or select.select([conn.socket], [], [], 0)[0]:
            state = reader.receive_head(self._max_head_bytes)
            if state is HeadState.COMPLETE:
                self._to_worker(conn)
                return
            if state is not HeadState.PARTIAL and state is not HeadState.EMPTY:
                self._conclude(conn, state)
                return
        self._start_head(conn, now)
        self._watch(conn)

    def _readable(self, sock_fd: int, conn: Any) -> None:
        if isinstance(conn, TlsHandshake):
            self._handshake_step(sock_fd, conn)
            return
        if getattr(conn, "linger_deadline", None) is not None:
            self._discard(sock_fd, conn)
            return
        reader = conn.rfile
        if not isinstance(reader, SocketReader):
            self._selector.unregister(sock_fd)
            self.server.process_conn(conn)
            return
        state = reader.receive_head(self._max_head_bytes)
        now = time.time()
        conn.last_used = now
        if state is HeadState.PARTIAL:
            if getattr(conn, "head_deadline", None) is None:
                self._start_head(conn, now)
            return
        if state is HeadState.EMPTY:
            return
        self._selector.unregister(sock_fd)
        self._end_head(conn)
        self._conclude(conn, state)

    def _conclude(self, conn: Any, state: HeadState) -> None:
        """A connection out of the selector: to a worker with its head, or refused, or
        closed."""
        if state is HeadState.COMPLETE:
            self._to_worker(conn)
        elif state is HeadState.TOO_LARGE:
            self._refuse(conn, HEAD_TOO_LARGE)
        else:
            with suppress(OSError):
                conn.close()

    def _expire(self, threshold: float) -> None:
        """Close idle connections past the server's timeout (cheroot's rule), answer 408 to
        those whose head is past its deadline, and close lingering ones that are done."""
        now = time.time()
        linger_idle = now - LINGER_IDLE_SECONDS
        late = []
        for sock_fd, conn in self._selector.connections:
            if conn is self.server:
                continue
            linger_deadline = getattr(conn, "linger_deadline", None)
            if linger_deadline is not None:
                if linger_deadline < now or conn.last_used < linger_idle:
                    late.append((sock_fd, conn))
            elif conn.last_used < threshold or (getattr(conn, "head_deadline", None) or now) < now:
                late.append((sock_fd, conn))
        for sock_fd, conn in late:
            self._selector.unregister(sock_fd)
            if isinstance(conn, TlsHandshake):
                self._end_handshake(conn)
                continue
            if getattr(conn, "linger_deadline", None) is not None:
                self._end_linger(conn)
                continue
            overdue = (getattr(conn, "head_deadline", None) or now) < now
            self._end_head(conn)
            if overdue:
                self._refuse(conn, HEAD_TOO_SLOW)
            else:
                with suppress(OSError):
                    conn.close()

    # --- accepting, shared with the sibling workers ---------------------------------------

    def _accept(self) -> None:
        """The listening socket is readable: accept (plain TCP or TLS), unless a sibling
        worker holds fewer connections and may take this one (``oxidav.connection_shares``):
        then look again after ``ACCEPT_RECHECK_SECONDS``, and accept what still waits after
        ``ACCEPT_DEFERRALS`` such looks."""
        share = self._share
        if share is not None and self._deferrals < ACCEPT_DEFERRALS and share.sibling_has_fewer():
            self._selector.unregister(self.server.socket.fileno())
            self._accept_deferred_until = time.monotonic() + ACCEPT_RECHECK_SECONDS
            self._deferrals += 1
            return
        self._deferrals = 0
        adapter = self.server.ssl_adapter
        if adapter is not None:
            self._accept_tls(adapter)
            return
        conn = self._from_server_socket(self.server.socket)
        if conn is None:
            return
        if share is not None:
            share.opened()
            conn.release_share = share.closed
        self._admit(conn)

    def _select_timeout(self, expiration_interval: float) -> float:
        """How long the next select may wait; puts the listening socket back in the
        selector once a deferral is over."""
        until = self._accept_deferred_until
        if until is None:
            return expiration_interval
        left = until - time.monotonic()
        if left > 0:
            return min(expiration_interval, left)
        self._accept_deferred_until = None
        self._selector.register(self.server.socket.fileno(), selectors.EVENT_READ, self.server)
        self._rechecking = True
        return 0

    def _rechecked(self, accept_ready: bool) -> None:
        """After the select that follows a deferral: nothing waiting means a sibling took
        the connection, and the count of looks starts again."""
        if self._rechecking and not accept_ready:
            self._deferrals = 0
        self._rechecking = False

    # --- cheroot's loop, with the steps above ----------------------------------------------

    def _run(self, expiration_interval: float) -> None:
        last_expiration_check = time.time()
        while not self._stop_requested:
            try:
                timeout = self._select_timeout(expiration_interval)
                active = list(self._selector.select(timeout=timeout))
            except OSError:
                self._remove_invalid_sockets()
                continue
            accept_ready = False
            for sock_fd, conn in active:
                if conn is self.server:
                    accept_ready = True
                    self._accept()
                else:
                    self._readable(sock_fd, conn)
            self._rechecked(accept_ready)
            now = time.time()
            if now - last_expiration_check > expiration_interval:
                self._expire(threshold=now - self.server.timeout)
                last_expiration_check = now

    @property
    def _num_connections(self) -> int:
        """Idle kept-alive connections (cheroot's count without those sending a head or
        lingering, and without the listening socket while it is in the selector)."""
        listening = 0 if self._accept_deferred_until is not None else 1
        return len(self._selector) - listening - self._heads_waiting - self._lingering


class DrainingThreadPool(ThreadPool):
    """cheroot's worker pool, whose ``stop`` cuts a connection still in a worker at the
    deadline in both directions: a request still receiving its body reads its end, one still
    sending its answer fails at once instead of waiting on a slow reader. (cheroot's own only
    shuts the read side, and looks for ``rfile.closed``, which its readers alone have.)"""

    @staticmethod
    def _force_close(conn: Any) -> None:
        if conn is None:
            return
        with suppress(OSError):
            conn.socket.shutdown(socket.SHUT_RDWR)


class FrontServer(wsgi.Server):
    """cheroot's WSGI server with a ``FrontConnectionManager`` and a ``DrainingThreadPool``.

    ``stop`` (cheroot's) is the graceful shutdown: it stops the front (closing idle
    kept-alive connections, those still sending a head and lingering ones), closes the
    listening socket, lets the workers finish what they are serving for up to
    ``shutdown_timeout`` seconds (their answers say ``Connection: close``), then cuts the
    connections still in a worker and waits for their threads.
    """

    _connections: Any  # cheroot's, which its type stubs leave out

    def __init__(
        self,
        *args: Any,
        request_head_timeout: float,
        max_request_head_bytes: int,
        listening_socket: socket.socket | None = None,
        connection_share: WorkerShare | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.listening_socket = listening_socket
        self.connection_share = connection_share
        self.request_head_timeout = request_head_timeout
        self.max_request_header_size = max_request_head_bytes
        pool = self.requests
        self.requests = DrainingThreadPool(
            self,
            min=pool.min,
            max=pool.max,
            accepted_queue_size=pool._queue.maxsize,
            accepted_queue_timeout=pool._queue_put_timeout,
        )

    def linger(self, conn: Any) -> bool:
        """Hand an answered ``conn`` to the front's lingering close (False: close it now, as
        while the server stops)."""
        manager = self._connections
        return self.ready and isinstance(manager, FrontConnectionManager) and manager.linger(conn)

    def bind(self, family: int, type: int, proto: int = 0) -> socket.socket:
        """cheroot's ``bind``, or the ``listening_socket`` handed in (a worker process's share
        of the supervisor's socket)."""
        if self.listening_socket is None:
            return super().bind(family, type, proto)  # type: ignore[no-any-return]
        self.socket = self.listening_socket
        self.bind_addr = self.listening_socket.getsockname()[:2]
        return self.listening_socket

    def prepare(self) -> None:
        """cheroot's ``prepare`` (bind, listen, start the workers), then the front in place of
        cheroot's connection manager. A shared listening socket is made non-blocking: the
        worker processes all wake for a new connection, the ones that lose the race get
        ``EAGAIN`` at once instead of waiting in ``accept`` (cheroot's one-second timeout)."""
        super().prepare()
        if self.listening_socket is not None:
            self.socket.setblocking(False)
        if hasattr(socket, "TCP_DEFER_ACCEPT") and self.socket.family != socket.AF_UNIX:
            # Linux: accept a connection once its first bytes are here (within the head
            # timeout), so most heads are complete when accepted.
            with suppress(OSError):
                self.socket.setsockopt(
                    socket.IPPROTO_TCP,
                    socket.TCP_DEFER_ACCEPT,
                    max(1, math.ceil(self.request_head_timeout)),
                )
        self._connections._selector.close()
        self._connections = FrontConnectionManager(
            self, self.request_head_timeout, self.max_request_header_size
        )


__all__ = ["DrainingThreadPool", "FrontConnectionManager", "FrontServer"]

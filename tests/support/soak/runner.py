"""The crash soak's engine: clients over real HTTP against an ``oxidav serve`` process that is
killed with SIGKILL at random (seeded) moments and restarted on the same data dir and database.

Each client owns one folder (``/soak/cN``) and runs one operation at a time — PUT small and
large, Nextcloud chunked upload v2 (MKCOL, PUT parts, MOVE ``.file``), Nextcloud bulk POST,
MOVE, DELETE, MKCOL, PROPPATCH, GET (the exact bytes last written) — keeping the model of what
the acknowledged (2xx) operations left there (``model``). The first operation that loses its
answer to the kill is *uncertain*: the folder must then hold exactly the state before it or
after it (a bulk POST all of its files or none). After each restart every folder is read back
whole (PROPFIND, GET of every file, the dead property) and compared; the observed state
becomes the model of the next round. Any 5xx, or a 4xx the model did not expect, is recorded
as a problem.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import random
import signal
import subprocess
import threading
import traceback
import uuid
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from tests.support.cli import run_oxidav
from tests.support.live import ServerProcess, start_server_process
from tests.support.soak import model
from tests.support.soak.model import Entry, Namespace

AUTH = {"Authorization": "Basic " + base64.b64encode(b"alice:secret").decode()}
FILES = "/remote.php/dav/files/alice"
UPLOADS = "/remote.php/dav/uploads/alice"
DAV = "{DAV:}"
PROP = "{urn:oxidav-soak}p"
#: Small chunks and no inline content: a large file is many chunks in the store.
CHUNKS = {
    "OXIDAV_BLOB_CHUNK_MIN": "4096",
    "OXIDAV_BLOB_CHUNK_AVG": "16384",
    "OXIDAV_BLOB_CHUNK_MAX": "65536",
    "OXIDAV_BLOB_INLINE_MAX": "0",
}
FILE_SLOTS = [f"f{i}" for i in range(5)]
DIR_SLOTS = [f"d{i}" for i in range(3)]
INNER_SLOTS = [f"g{i}" for i in range(3)]
PROPFIND_BODY = (
    b'<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:s="urn:oxidav-soak"><d:prop>'
    b"<d:resourcetype/><d:getcontentlength/><s:p/></d:prop></d:propfind>"
)


BULK = "/remote.php/dav/bulk"
BOUNDARY = "soak_boundary_26"
BULK_HEADERS = {"Content-Type": f'multipart/related; boundary="{BOUNDARY}"'}


def bulk_body(root: str, files: dict[str, bytes]) -> bytes:
    """A Nextcloud bulk upload body writing ``files`` (relative to ``root``)."""
    user_root = root[len(FILES) :]
    body = b""
    for rel, data in files.items():
        head = (
            f"--{BOUNDARY}\r\nContent-Length: {len(data)}\r\n"
            f"Content-Type: application/octet-stream\r\n"
            f"X-File-MD5: {hashlib.md5(data).hexdigest()}\r\nX-File-Mtime: 1700000000\r\n"
            f"X-File-Path: {user_root}/{rel}\r\n\r\n"
        )
        body += head.encode() + data + b"\r\n"
    return body + f"--{BOUNDARY}--\r\n".encode()


NOTHING = "nothing to do"  # the chosen operation had no target (e.g. MOVE in an empty folder)


class Lost(Exception):
    """The answer to a request was lost (the server was killed)."""


@dataclass
class Stats:
    requests: int = 0
    acknowledged: int = 0
    uncertain: int = 0
    uncertain_applied: int = 0
    kills: int = 0
    rounds: int = 0
    problems: list[str] = field(default_factory=list)
    by_kind: Counter[str] = field(default_factory=Counter)  # acknowledged operations
    lock: threading.Lock = field(default_factory=threading.Lock)

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text)


def http_request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request(method, path, body=body, headers={**AUTH, **(headers or {})})
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:
        raise Lost(f"{method} {path}: {exc!r}") from exc
    finally:
        conn.close()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Client:
    """One client: its folder, its model, and its random choices."""

    def __init__(self, index: int, seed: int, stats: Stats) -> None:
        self.index = index
        self.root = f"{FILES}/soak/c{index}"
        self.ns: Namespace = {}
        self.rng = random.Random(seed)
        self.stats = stats
        self.allowed: list[Namespace] = [{}]  # what the folder may hold after this round
        self.kind = ""  # of the operation in flight
        self.pending: Namespace = {}  # the namespace if the operation in flight is applied

    def url(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def call(
        self,
        port: int,
        method: str,
        path: str,
        expect: tuple[int, ...],
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> bytes:
        with self.stats.lock:
            self.stats.requests += 1
        status, data = http_request(port, method, path, body, headers)
        if status not in expect:
            self.stats.problem(f"c{self.index} {method} {path} answered {status}: {data[:300]!r}")
            raise Lost("unexpected status")  # the model can no longer say what is there
        return data

    # --- choosing an operation -------------------------------------------------------------

    def _files(self) -> list[str]:
        return [p for p, e in self.ns.items() if not e.folder]

    def _dirs(self) -> list[str]:
        return [p for p, e in self.ns.items() if e.folder]

    def _file_slot(self) -> str:
        choices = list(FILE_SLOTS) + [f"{d}/{g}" for d in self._dirs() for g in INNER_SLOTS]
        return self.rng.choice(choices)

    def _content(self, large: bool) -> bytes:
        size = self.rng.randrange(150_000, 260_000) if large else self.rng.randrange(0, 3000)
        return self.rng.randbytes(size)

    def step(self, port: int) -> Namespace:
        """One operation; returns the namespace after it (raises ``Lost`` if unanswered)."""
        kind = self.rng.choices(
            ["small", "large", "chunked", "bulk", "move", "delete", "mkcol", "proppatch", "get"],
            weights=[5, 2, 2, 2, 2, 1, 1, 2, 3],
        )[0]
        self.kind = kind
        ns = self.ns
        if kind == "get" and self._files():
            path = self.rng.choice(sorted(self._files()))
            data = self.call(port, "GET", self.url(path), (200,))
            if sha(data) != ns[path].sha:
                self.stats.problem(f"c{self.index} GET {path}: {len(data)} bytes, not as written")
            return ns
        if kind in ("small", "large"):
            path, body = self._file_slot(), self._content(kind == "large")
            after = model.put(ns, path, sha(body))
            self.pending = after
            self.call(port, "PUT", self.url(path), (201, 204), body)
            return after
        if kind == "chunked":
            path = self._file_slot()
            parts = [
                self._content(self.rng.random() < 0.5) for _ in range(self.rng.randrange(1, 4))
            ]
            transfer = f"{UPLOADS}/soak-{uuid.UUID(int=self.rng.getrandbits(128)).hex}"
            self.pending = ns  # nothing visible changes before the final MOVE
            self.call(port, "MKCOL", transfer, (201,))
            for n, part in enumerate(parts, 1):
                self.call(port, "PUT", f"{transfer}/{n:05d}", (201, 204), part)
            after = model.put(ns, path, sha(b"".join(parts)))
            self.pending = after
            self.call(
                port,
                "MOVE",
                f"{transfer}/.file",
                (201, 204),
                headers={
                    "Destination": self.url(path),
                    "OC-Total-Length": str(sum(map(len, parts))),
                },
            )
            return after
        if kind == "bulk":
            files = {self._file_slot(): self._content(self.rng.random() < 0.2) for _ in range(4)}
            after = ns
            for path, body in files.items():
                after = model.put(after, path, sha(body))
            self.pending = after
            answer = self.call(
                port, "POST", BULK, (200,), bulk_body(self.root, files), BULK_HEADERS
            )
            failed = [k for k, v in json.loads(answer).items() if v.get("error") is not False]
            if failed:
                self.stats.problem(f"c{self.index} bulk POST failed for {failed}: {answer[:300]!r}")
                raise Lost("bulk refused")
            return after
        if kind == "move" and ns:
            src = self.rng.choice(sorted(ns))
            dst = self.rng.choice(DIR_SLOTS) if ns[src].folder else self._file_slot()
            if dst == src or dst.startswith(src + "/") or dst.split("/")[0] == src:
                return ns
            after = model.move(ns, src, dst)
            self.pending = after
            headers = {"Destination": self.url(dst), "Overwrite": "T"}
            self.call(port, "MOVE", self.url(src), (201, 204), headers=headers)
            return after
        if kind == "delete" and ns:
            path = self.rng.choice(sorted(ns))
            after = model.remove(ns, path)
            self.pending = after
            self.call(port, "DELETE", self.url(path), (204,))
            return after
        if kind == "mkcol":
            free = [d for d in DIR_SLOTS if d not in ns]
            if not free:
                return ns
            path = self.rng.choice(free)
            after = model.mkcol(ns, path)
            self.pending = after
            self.call(port, "MKCOL", self.url(path), (201,))
            return after
        if kind == "proppatch" and ns:
            path = self.rng.choice(sorted(ns))
            value = f"v{self.rng.getrandbits(32):08x}"
            after = model.proppatch(ns, path, value)
            self.pending = after
            body = (
                '<?xml version="1.0"?><d:propertyupdate xmlns:d="DAV:" xmlns:s="urn:oxidav-soak">'
                f"<d:set><d:prop><s:p>{value}</s:p></d:prop></d:set></d:propertyupdate>"
            ).encode()
            answer = self.call(port, "PROPPATCH", self.url(path), (207,), body)
            if b"200 OK" not in answer:
                self.stats.problem(f"c{self.index} PROPPATCH {path} not set: {answer[:300]!r}")
                raise Lost("proppatch refused")
            return after
        self.kind = NOTHING
        return ns

    def run(self, port: int, stop: threading.Event) -> None:
        """Operations until the server is gone (or ``stop``); the last one may be uncertain."""
        try:
            self._run(port, stop)
        except Exception:  # a broken client must fail the soak, not end it quietly
            self.stats.problem(f"c{self.index} crashed: {traceback.format_exc()}")

    def _run(self, port: int, stop: threading.Event) -> None:
        self.allowed = [self.ns]
        while not stop.is_set():
            self.pending = self.ns
            try:
                after = self.step(port)
            except Lost:
                with self.stats.lock:
                    self.stats.uncertain += 1
                self.allowed = [self.ns, self.pending]
                return
            self.ns = after
            self.allowed = [after]
            if self.kind == NOTHING:
                continue
            with self.stats.lock:
                self.stats.acknowledged += 1
                self.stats.by_kind[self.kind] += 1

    # --- reading the folder back -----------------------------------------------------------

    def observe(self, port: int) -> Namespace:
        """The folder as the server shows it now (PROPFIND each folder, GET each file)."""
        seen: Namespace = {}
        todo = [""]
        while todo:
            rel = todo.pop()
            status, body = http_request(
                port,
                "PROPFIND",
                self.url(rel) if rel else self.root + "/",
                PROPFIND_BODY,
                {"Depth": "1", "Content-Type": "application/xml"},
            )
            assert status == 207, (rel, status, body[:300])
            base = urlsplit(self.root).path + "/"
            for response in ET.fromstring(body).iter(f"{DAV}response"):
                href = unquote(urlsplit(response.findtext(f"{DAV}href") or "").path)
                path = href[len(base) :].strip("/") if href.startswith(base) else ""
                if path == rel or not path:
                    continue
                folder = response.find(f".//{DAV}resourcetype/{DAV}collection") is not None
                prop = None
                for propstat in response.iter(f"{DAV}propstat"):
                    if "200" in (propstat.findtext(f"{DAV}status") or ""):
                        found = propstat.find(f"{DAV}prop/{PROP}")
                        if found is not None:
                            prop = found.text or ""
                if folder:
                    seen[path] = Entry(True, None, prop)
                    todo.append(path)
                else:
                    status, data = http_request(port, "GET", self.url(path))
                    if status != 200:
                        self.stats.problem(f"c{self.index} GET {path} answered {status}")
                    seen[path] = Entry(False, sha(data), prop)
        return seen

    def verify(self, port: int) -> None:
        seen = self.observe(port)
        if seen not in self.allowed:
            self.stats.problem(
                f"c{self.index}: folder holds {describe(seen)}; "
                f"allowed: {' or '.join(describe(a) for a in self.allowed)}"
            )
        elif len(self.allowed) == 2 and seen == self.allowed[1] != self.allowed[0]:
            with self.stats.lock:
                self.stats.uncertain_applied += 1
        self.ns = seen  # what survived the kill is what the next round builds on


def describe(ns: Namespace) -> str:
    return (
        "{"
        + ", ".join(
            f"{p}:{'dir' if e.folder else (e.sha or '')[:8]}{'+' + e.prop if e.prop else ''}"
            for p, e in sorted(ns.items())
        )
        + "}"
    )


def oxidav(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_oxidav(env, *args, timeout=600)


@dataclass
class Soak:
    env: dict[str, str]
    clients: int
    rounds: int
    seed: int
    stats: Stats = field(default_factory=Stats)
    servers: list[ServerProcess] = field(default_factory=list)

    def start(self, round_no: int) -> int:
        # Every other round stores in small chunks, nothing inline: large files are many chunks.
        env = {**self.env, **(CHUNKS if round_no % 2 == 0 else {})}
        server = start_server_process(["--port", "0"], env=env)
        self.servers.append(server)
        return int(server.base_url.rsplit(":", 1)[1])

    def kill(self) -> None:
        server = self.servers[-1]
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait()
        with self.stats.lock:
            self.stats.kills += 1

    def run(self, after_round: Callable[[int], None] | None = None) -> Stats:
        rng = random.Random(self.seed)
        port = self.start(0)
        for path in ("/soak",):
            assert http_request(port, "MKCOL", FILES + path)[0] == 201
        clients = [Client(i, rng.getrandbits(64), self.stats) for i in range(self.clients)]
        for client in clients:
            assert http_request(port, "MKCOL", client.root)[0] == 201
        for round_no in range(self.rounds):
            if round_no:
                port = self.start(round_no)
                for client in clients:
                    client.verify(port)
            stop = threading.Event()
            threads = [
                threading.Thread(target=c.run, args=(port, stop), daemon=True) for c in clients
            ]
            for thread in threads:
                thread.start()
            target = self.stats.requests + rng.randrange(15, 30 * self.clients)
            while self.stats.requests < target and any(t.is_alive() for t in threads):
                threading.Event().wait(0.005)  # polling a counter, not timing an assertion
            self.kill()
            stop.set()
            for thread in threads:
                thread.join(180)
                assert not thread.is_alive(), "a client hung after the kill"
            self.stats.rounds += 1
            if after_round:
                after_round(round_no)
        port = self.start(self.rounds)
        for client in clients:
            client.verify(port)
        self.kill()
        return self.stats

"""Resource bench of issue 24's attacks: ``python -m bench hostile [--only NAME] [--src DIR |
--rev REV]``.

For each attack a fresh ``oxidav serve`` (SQLite, new data folder, user alice) is started; the
attack runs against it on loopback, bounded in time and in connections, while a sampler reads
the server's VmRSS from /proc every 50 ms and a prober sends a normal authenticated request
(PROPFIND Depth:0 of alice's files, fresh connection, 5 s client timeout) every 200 ms. The
table gives, per attack, the peak RSS growth during the attack and one second after it, the RSS
growth left once it is over, the slowest normal request (a probe that got no answer within its
timeout counts as that timeout), how long the attack's own requests took, and a note (the
statuses the attack got). Targets: RSS growth at most 32 MiB, every normal request answered
within 1 s; the exit status is 1 if any attack misses one, gets a 5xx, or gets no answer to
one of its own requests within 30 s.

``--src DIR`` runs the ``oxidav`` package found in DIR (e.g. another checkout, for BEFORE and
AFTER), ``--rev REV`` the package of a git revision of this repository (exported as
bench/_revisions.py does); by default the installed one.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from bench._files_servers import free_port
from bench._revisions import export_revision

RSS_TARGET_MIB = 32.0
LATENCY_TARGET_S = 1.0
PROBE_TIMEOUT_S = 5.0
ATTACK_LIMIT_S = 30.0
ALICE = "Basic " + base64.b64encode(b"alice:secret").decode()
FILES = "/remote.php/dav/files/alice/"
CALENDAR = "/remote.php/dav/calendars/alice/personal/"


@dataclass
class Target:
    process: subprocess.Popen[bytes]
    port: int

    def rss_kib(self) -> int:
        with suppress(OSError):
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def connect(self, timeout: float = 10.0) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = ATTACK_LIMIT_S,
    ) -> tuple[int, int]:
        """One request on a fresh connection as alice: (status, body bytes read)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(
                method, path, body=body, headers={"Authorization": ALICE, **(headers or {})}
            )
            response = conn.getresponse()
            size = 0
            while chunk := response.read(1 << 20):
                size += len(chunk)
            return response.status, size
        finally:
            conn.close()


@contextmanager
def serve(source: Path | None) -> Iterator[Target]:
    """``oxidav serve`` on a fresh SQLite data folder, with alice; ``source`` as in the
    module docstring."""
    with tempfile.TemporaryDirectory(prefix="oxidav-hostile-") as tmp:
        env = {
            **os.environ,
            "OXIDAV_DATA_DIR": str(Path(tmp) / "data"),
            "OXIDAV_LOG_LEVEL": "ERROR",
        }
        if source is not None:
            env["PYTHONPATH"] = str(source)
        cli = [sys.executable, "-m", "oxidav.cli"]
        # A new installation: made here, as ``--init`` would (older revisions lack the flag).
        Path(env["OXIDAV_DATA_DIR"]).mkdir()
        subprocess.run(
            [*cli, "user", "add", "alice", "--password", "secret"],
            env=env,
            cwd=source or tmp,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        port = free_port()
        process = subprocess.Popen(
            [*cli, "serve", "--port", str(port)],
            env=env,
            cwd=source or tmp,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            target = Target(process, port)
            deadline = time.monotonic() + 60
            while True:
                try:
                    if (
                        target.request("PROPFIND", FILES, headers={"Depth": "0"}, timeout=5)[0]
                        == 207
                    ):
                        break
                except OSError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("oxidav serve did not come up")
                time.sleep(0.1)
            yield target
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --- the attacks: each returns a note; all bounded by ATTACK_LIMIT_S -----------------------


def _hold(sockets: list[socket.socket], seconds: float) -> None:
    time.sleep(seconds)
    for sock in sockets:
        with suppress(OSError):
            sock.close()


def _answer_status(sock: socket.socket) -> str:
    sock.settimeout(3)
    try:
        head = sock.recv(64)
    except OSError:
        return "-"
    parts = head.split(b" ", 2)
    return parts[1].decode() if len(parts) > 1 else "closed"


def huge_content_length(target: Target) -> str:
    """3 connections announce Content-Length: 300000000 to /status.php and send no body."""
    sockets = []
    for _ in range(3):
        sock = target.connect()
        sock.sendall(b"POST /status.php HTTP/1.1\r\nHost: x\r\nContent-Length: 300000000\r\n\r\n")
        sockets.append(sock)
    _hold(sockets, 5)
    return "held 5 s"


def chunk_size_line(target: Target) -> str:
    """A chunked PUT whose chunk-size line says 12000000 (0xb71b00... as hex '12000000'),
    followed by 3 bytes."""
    sock = target.connect()
    sock.sendall(
        f"PUT {FILES}chunky HTTP/1.1\r\nHost: x\r\nAuthorization: {ALICE}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n12000000\r\nabc".encode()
    )
    _hold([sock], 5)
    return "held 5 s"


def header_line(target: Target) -> str:
    """One 64 MiB header line on a GET of /status.php."""
    sock = target.connect(timeout=30)
    status = "-"
    try:
        sock.sendall(b"GET /status.php HTTP/1.1\r\nHost: x\r\nX-Big: ")
        piece = b"a" * (1 << 20)
        for _ in range(64):
            sock.sendall(piece)
        sock.sendall(b"\r\n\r\n")
        status = _answer_status(sock)
    except OSError as exc:
        status = type(exc).__name__
    finally:
        sock.close()
    return f"answer {status}"


def slow_heads(target: Target) -> str:
    """200 connections send half a request head, then one byte a second for 8 s."""
    sockets = []
    for _ in range(200):
        try:
            sock = target.connect()
            sock.sendall(b"GET /status.php HTTP/1.1\r\nHost: x\r\n")
            sockets.append(sock)
        except OSError:
            break
    opened = len(sockets)
    for _ in range(8):
        time.sleep(1)
        for sock in sockets:
            with suppress(OSError):
                sock.sendall(b"X")
    _hold(sockets, 0)
    return f"{opened} open"


_SECONDLY = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bench//EN\r\nBEGIN:VEVENT\r\nUID:secondly\r\n"
    "DTSTAMP:20240101T000000Z\r\nDTSTART:20200101T000000Z\r\nDTEND:20200101T000001Z\r\n"
    "RRULE:FREQ=SECONDLY\r\nSUMMARY:s\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)
_NEVER = _SECONDLY.replace("UID:secondly", "UID:never").replace(
    "RRULE:FREQ=SECONDLY", "RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30"
)
_FREE_BUSY = (
    b'<C:free-busy-query xmlns:C="urn:ietf:params:xml:ns:caldav">'
    b'<C:time-range start="20240101T000000Z" end="20240103T000000Z"/></C:free-busy-query>'
)


def _status_or_timeout(call: Callable[[], tuple[int, int]]) -> str:
    try:
        return str(call()[0])
    except TimeoutError:
        return f"no answer in {ATTACK_LIMIT_S:.0f} s"
    except OSError as exc:
        return type(exc).__name__


def secondly_free_busy(target: Target) -> str:
    """PUT a FREQ=SECONDLY event starting 2020, then a 2-day free-busy query."""
    put = _status_or_timeout(
        lambda: target.request(
            "PUT", CALENDAR + "s.ics", _SECONDLY.encode(), {"Content-Type": "text/calendar"}
        )
    )
    report = _status_or_timeout(
        lambda: target.request(
            "REPORT", CALENDAR, _FREE_BUSY, {"Depth": "1", "Content-Type": "text/xml"}
        )
    )
    return f"PUT {put}, free-busy {report}"


def never_occurring_rule(target: Target) -> str:
    """PUT an event whose rule never occurs (FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30)."""
    put = _status_or_timeout(
        lambda: target.request(
            "PUT", CALENDAR + "n.ics", _NEVER.encode(), {"Content-Type": "text/calendar"}
        )
    )
    return f"PUT {put}"


def multiget_duplicates(target: Target) -> str:
    """A 1 MiB event, then a calendar-multiget naming it 60 times."""
    description = "DESCRIPTION:" + "x" * 70 + "\r\n "
    big = _SECONDLY.replace("RRULE:FREQ=SECONDLY\r\n", "").replace("UID:secondly", "UID:big")
    big = big.replace("SUMMARY:s\r\n", "SUMMARY:s\r\n" + description * 14000 + "x\r\n")
    put = _status_or_timeout(
        lambda: target.request(
            "PUT", CALENDAR + "big.ics", big.encode(), {"Content-Type": "text/calendar"}
        )
    )
    hrefs = f"<D:href>{CALENDAR}big.ics</D:href>" * 60
    body = (
        '<C:calendar-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">'
        f"<D:prop><D:getetag/><C:calendar-data/></D:prop>{hrefs}</C:calendar-multiget>"
    ).encode()
    try:
        status, size = target.request(
            "REPORT", CALENDAR, body, {"Depth": "1", "Content-Type": "text/xml"}
        )
        report = f"{status}, {size / (1 << 20):.0f} MiB"
    except OSError as exc:
        report = type(exc).__name__
    return f"PUT {put}, multiget {report}"


def repeated_dead_property(target: Target) -> str:
    """A 60,000-byte dead property (under the size cap), then a PROPFIND naming it 1000 times
    (a 9 KB request)."""
    target.request("PUT", FILES + "p.txt", b"p")
    value = "v" * 60_000
    patch = (
        '<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:bench"><D:set><D:prop>'
        f"<Z:big>{value}</Z:big></D:prop></D:set></D:propertyupdate>"
    ).encode()
    patched = _status_or_timeout(lambda: target.request("PROPPATCH", FILES + "p.txt", patch))
    body = (
        '<D:propfind xmlns:D="DAV:" xmlns:Z="urn:bench"><D:prop>'
        + "<Z:big/>" * 1000
        + "</D:prop></D:propfind>"
    ).encode()
    try:
        status, size = target.request("PROPFIND", FILES + "p.txt", body, {"Depth": "0"})
        found = f"{status}, {size / (1 << 20):.0f} MiB"
    except OSError as exc:
        found = type(exc).__name__
    return f"PROPPATCH {patched}, PROPFIND {found}"


def fresh_user_logins(target: Target) -> str:
    """24 concurrent requests, each with a new user name (Basic), 3 rounds."""
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def one(name: str) -> None:
        token = base64.b64encode(f"{name}:wrong".encode()).decode()
        conn = http.client.HTTPConnection("127.0.0.1", target.port, timeout=ATTACK_LIMIT_S)
        try:
            conn.request(
                "PROPFIND", FILES, headers={"Authorization": f"Basic {token}", "Depth": "0"}
            )
            status = conn.getresponse().status
        except OSError:
            status = 0
        finally:
            conn.close()
        with lock:
            statuses[status] = statuses.get(status, 0) + 1

    for round_ in range(3):
        threads = [threading.Thread(target=one, args=(f"u{round_}-{i}",)) for i in range(24)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return ", ".join(f"{count} x {status}" for status, count in sorted(statuses.items()))


def dtd_entity(target: Target) -> str:
    """PROPPATCH with a DTD entity, then PROPFIND allprop of the file and Depth:1 of its folder."""
    target.request("PUT", FILES + "e.txt", b"e")
    patch = (
        b'<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/hostname">]>'
        b'<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:bench"><D:set><D:prop>'
        b"<Z:leak>&x;</Z:leak></D:prop></D:set></D:propertyupdate>"
    )
    patched = _status_or_timeout(lambda: target.request("PROPPATCH", FILES + "e.txt", patch))
    allprop = b'<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>'
    one = _status_or_timeout(
        lambda: target.request("PROPFIND", FILES + "e.txt", allprop, {"Depth": "0"})
    )
    folder = _status_or_timeout(lambda: target.request("PROPFIND", FILES, allprop, {"Depth": "1"}))
    return f"PROPPATCH {patched}, PROPFIND {one}, Depth:1 {folder}"


ATTACKS: dict[str, Callable[[Target], str]] = {
    "content-length": huge_content_length,
    "chunk-size": chunk_size_line,
    "header-line": header_line,
    "slow-heads": slow_heads,
    "secondly": secondly_free_busy,
    "never-rule": never_occurring_rule,
    "multiget": multiget_duplicates,
    "dead-prop": repeated_dead_property,
    "logins": fresh_user_logins,
    "dtd-entity": dtd_entity,
}


# --- measuring ------------------------------------------------------------------------------


@dataclass
class Figures:
    name: str
    peak_mib: float = 0.0
    left_mib: float = 0.0
    slowest_s: float = 0.0
    probes: int = 0
    attack_s: float = 0.0
    note: str = ""
    samples: list[int] = field(default_factory=list)

    @property
    def server_error(self) -> bool:
        """The attack's own requests got a 5xx (the note lists their statuses)."""
        words = self.note.replace(",", " ").split()
        return any(len(w) == 3 and w.isdigit() and w.startswith("5") for w in words)

    @property
    def passed(self) -> bool:
        fits = self.peak_mib <= RSS_TARGET_MIB and self.slowest_s <= LATENCY_TARGET_S
        return fits and not self.server_error and "no answer" not in self.note


def _probe_once(target: Target) -> float:
    started = time.monotonic()
    try:
        status, _ = target.request(
            "PROPFIND", FILES, headers={"Depth": "0"}, timeout=PROBE_TIMEOUT_S
        )
    except OSError:
        return PROBE_TIMEOUT_S
    elapsed = time.monotonic() - started
    return elapsed if status == 207 else max(elapsed, PROBE_TIMEOUT_S)


def measure(name: str, source: Path | None) -> Figures:
    figures = Figures(name)
    with serve(source) as target:
        baseline = target.rss_kib()
        running = threading.Event()
        running.set()
        latencies: list[float] = []

        def sample() -> None:
            while running.is_set():
                figures.samples.append(target.rss_kib())
                time.sleep(0.05)

        def probe() -> None:
            while running.is_set():
                latencies.append(_probe_once(target))
                time.sleep(0.2)

        threads = [
            threading.Thread(target=sample, daemon=True),
            threading.Thread(target=probe, daemon=True),
        ]
        for thread in threads:
            thread.start()
        started = time.monotonic()
        try:
            figures.note = ATTACKS[name](target)
        except OSError as exc:
            figures.note = f"attack ended: {type(exc).__name__}"
        figures.attack_s = time.monotonic() - started
        time.sleep(1)
        running.clear()
        for thread in threads:
            thread.join(timeout=PROBE_TIMEOUT_S + 1)
        figures.peak_mib = (max(figures.samples, default=baseline) - baseline) / 1024
        figures.left_mib = (target.rss_kib() - baseline) / 1024
        figures.slowest_s = max(latencies, default=0.0)
        figures.probes = len(latencies)
    return figures


def _table(rows: list[Figures]) -> str:
    lines = [
        f"targets: RSS growth ≤ {RSS_TARGET_MIB:.0f} MiB, "
        f"normal request ≤ {LATENCY_TARGET_S:.0f} s, no 5xx, every attack request answered",
        f"{'attack':<15} {'peak RSS +MiB':>13} {'left +MiB':>9} {'slowest normal':>14} "
        f"{'probes':>6} {'attack':>8}  ok  note",
    ]
    for row in rows:
        lines.append(
            f"{row.name:<15} {row.peak_mib:>13.1f} {row.left_mib:>9.1f} {row.slowest_s:>12.2f} s "
            f"{row.probes:>6} {row.attack_s:>6.1f} s  {'yes' if row.passed else 'NO':<3} "
            f"{row.note}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench hostile", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--only", choices=sorted(ATTACKS), action="append", help="run this attack (repeatable)"
    )
    side = parser.add_mutually_exclusive_group()
    side.add_argument("--src", type=Path, help="folder holding the oxidav package to serve")
    side.add_argument("--rev", help="git revision whose oxidav package to serve")
    args = parser.parse_args(argv)
    names = args.only or list(ATTACKS)
    with tempfile.TemporaryDirectory(prefix="oxidav-hostile-src-") as tmp:
        source: Path | None = args.src.resolve() if args.src else None
        if args.rev:
            source = export_revision(args.rev, Path(tmp))
        rows = []
        for name in names:
            row = measure(name, source)
            print(
                f"{name}: peak +{row.peak_mib:.1f} MiB, slowest {row.slowest_s:.2f} s — {row.note}",
                flush=True,
            )
            rows.append(row)
    print(_table(rows))
    return 0 if all(row.passed for row in rows) else 1

"""The fuzz suite's server wrapper and seed data: ``Fuzz.send`` sends one example and checks
the suite's properties on its answer (tests/fuzz/conftest.py says which, and holds the
hypothesis profiles and the per-module fixture)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlalchemy import select

import oxidav.db.models  # noqa: F401  (every table in Base.metadata)
from oxidav.db import Base, Database
from tests.support.live import LiveServer
from tests.support.raw_http import Answer, build_request, exchange

FILES = "/remote.php/dav/files/alice"
CALENDAR = "/remote.php/dav/calendars/alice/personal"
BOOK = "/remote.php/dav/addressbooks/users/alice/contacts"
UPLOADS = "/remote.php/dav/uploads/alice"

EVENT = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//fuzz//EN\r\nBEGIN:VEVENT\r\n"
    "UID:seed-event\r\nDTSTAMP:20240101T000000Z\r\nDTSTART:20240102T100000Z\r\n"
    "DTEND:20240102T110000Z\r\nSUMMARY:seed\r\nRRULE:FREQ=WEEKLY;COUNT=5\r\n"
    "END:VEVENT\r\nEND:VCALENDAR\r\n"
)
CARD = (
    "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:seed-card\r\nFN:Seed Card\r\nN:Card;Seed;;;\r\nEND:VCARD\r\n"
)

#: Tables whose rows may change on any request: login bookkeeping, and the content-addressed
#: blob store, where a refused upload may leave unreferenced blobs for the collector.
_VOLATILE = {
    "users",
    "app_passwords",
    "authz_state",
    "nc_login_flows",
    "blob_chunks",
    "blob_manifests",
    "blob_manifest_chunks",
}


_ALLPROP = b"<?xml version='1.0'?><propfind xmlns='DAV:'><allprop/></propfind>"
_NEW_BOOK = (
    '<D:mkcol xmlns:D="DAV:" xmlns:A="urn:ietf:params:xml:ns:carddav"><D:set><D:prop>'
    "<D:resourcetype><D:collection/><A:addressbook/></D:resourcetype></D:prop></D:set></D:mkcol>"
)


@dataclass
class Fuzz:
    live: LiveServer
    counter: int = 0

    @property
    def port(self) -> int:
        return self.live.port

    @property
    def db(self) -> Database:
        assert self.live.services is not None
        return self.live.services.db

    def seed(self) -> None:
        """Make sure the seeded resources exist (an accepted fuzz request may have moved them)."""
        for method, path, body in (
            ("MKCOL", f"{FILES}/sub", None),
            ("MKCOL", f"{FILES}/scratch", None),
            ("PUT", f"{FILES}/a.txt", b"alpha"),
            ("PUT", f"{FILES}/sub/b.txt", b"beta"),
            ("PUT", f"{CALENDAR}/seed.ics", EVENT.encode()),
            ("PUT", f"{BOOK}/seed.vcf", CARD.encode()),
        ):
            headers = {}
            if method == "PUT":
                headers["If-None-Match"] = "*"
                if path.endswith(".ics"):
                    headers["Content-Type"] = "text/calendar"
                elif path.endswith(".vcf"):
                    headers["Content-Type"] = "text/vcard"
            response = self.live.request(method, path, body, headers)
            assert response.status < 500, (method, path, response.status, response.body[:300])

    def digest(self) -> str:
        """A digest of every stored row but those of ``_VOLATILE`` tables."""
        metadata = Base.metadata
        digest = hashlib.sha256()
        with self.db.engine.connect() as conn:
            for name in sorted(metadata.tables):
                if name in _VOLATILE or name.startswith("alembic"):
                    continue
                table = metadata.tables[name]
                rows = conn.execute(select(table)).all()
                digest.update(name.encode())
                for row in sorted(repr(tuple(row)) for row in rows):
                    digest.update(row.encode())
        return digest.hexdigest()

    def fresh(self, kind: str = "file") -> str:
        """A new resource in a scratch area (so that a poisoned one spoils one example only):
        a file, a folder, a calendar or an address book; its path."""
        self.counter += 1
        if kind == "calendar":
            path = f"/remote.php/dav/calendars/alice/scratch-{self.counter}/"
            response = self.live.request("MKCALENDAR", path)
        elif kind == "book":
            path = f"/remote.php/dav/addressbooks/users/alice/scratch-{self.counter}/"
            response = self.live.request("MKCOL", path, _NEW_BOOK, {"Content-Type": "text/xml"})
        elif kind == "folder":
            path = f"{FILES}/scratch/d-{self.counter}/"
            response = self.live.request("MKCOL", path)
        else:
            path = f"{FILES}/scratch/f-{self.counter}.txt"
            response = self.live.request("PUT", path, b"scratch")
        assert response.status == 201, (kind, response.status, response.body[:300])
        return path

    def still_serves(self, *also: str) -> None:
        """A normal request is answered: alice's files read (allprop, Depth 1), and so do the
        resources ``also`` (allprop, Depth 1: a collection's members too)."""
        targets = [(p, "1") for p in (f"{FILES}/", *also)]
        for path, depth in targets:
            request = build_request("PROPFIND", path, {"Depth": depth}, _ALLPROP)
            answer = exchange(self.port, request, "PROPFIND")
            assert answer.status in {207, 404}, (path, answer.status, answer.body[:300])

    def send(
        self,
        request: bytes,
        method: str,
        *,
        writes: bool = True,
        keepalive_check: bool = True,
        half_close: bool = False,
        reads: tuple[str, ...] = (),
    ) -> Answer:
        """Send one fuzzed request and check the suite's properties (module docstring)."""
        before = self.digest() if writes else ""
        answer = exchange(
            self.port, request, method, keepalive_check=keepalive_check, half_close=half_close
        )
        # RFC 4918 §9.8.5/§9.9.4: a COPY or MOVE to another URL namespace is 502.
        cross_namespace = method in {"COPY", "MOVE"} and answer.status == 502
        assert answer.status < 500 or cross_namespace, (answer.status, answer.body[:500])
        if writes and 400 <= answer.status < 500:
            assert self.digest() == before, f"a refused request ({answer.status}) changed state"
        self.still_serves(*reads)
        return answer

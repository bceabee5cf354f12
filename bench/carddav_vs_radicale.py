"""addressbook-query by EMAIL on 5,000 cards: oxidav against Radicale, in the same run.

Both servers run as their own processes on 127.0.0.1 and hold the same cards (vCard 3.0, every
tenth with a small photo). oxidav receives them as 5,000 PUTs, Radicale as one collection PUT
(its fastest import; the load is not what is compared). Then each answers the same
addressbook-query REPORTs (getetag + address-data), a selective one (one card) and a broad one
(1 % of the cards), on one keep-alive connection each: one warm-up (Radicale builds its item
cache then), then ``--runs`` timed requests; the medians are compared.

Both must return the same set of UIDs for every query; the run exits non-zero on a mismatch or
unless oxidav is faster. ``--target`` (default 10) is the speed-up the issue asks for; it is
reported, and ``--strict`` makes missing it an error too.

    python -m bench carddav_vs_radicale [--cards 5000] [--runs 20] [--database-url URL]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
import statistics
import tempfile
import time
from pathlib import Path

from lxml import etree

from bench._vs_radicale import USER, Client, side_by_side

C = "urn:ietf:params:xml:ns:carddav"
DOMAINS = 100
QUERY = (
    '<?xml version="1.0" encoding="utf-8"?>'
    f'<C:addressbook-query xmlns:D="DAV:" xmlns:C="{C}">'
    "<D:prop><D:getetag/><C:address-data/></D:prop>"
    '<C:filter><C:prop-filter name="EMAIL">'
    '<C:text-match collation="i;unicode-casemap" match-type="contains">{needle}</C:text-match>'
    "</C:prop-filter></C:filter></C:addressbook-query>"
)
MKCOL = (
    '<?xml version="1.0" encoding="utf-8"?>'
    f'<D:mkcol xmlns:D="DAV:" xmlns:C="{C}"><D:set><D:prop>'
    "<D:resourcetype><D:collection/><C:addressbook/></D:resourcetype>"
    "<D:displayname>Bench</D:displayname></D:prop></D:set></D:mkcol>"
)


def vcard(i: int) -> str:
    lines = [
        "BEGIN:VCARD",
        "VERSION:3.0",
        f"UID:bench-{i:05d}",
        f"FN:Person {i:05d} Müller",
        f"N:Müller;Person {i:05d};;;",
        f"EMAIL;TYPE=INTERNET,WORK:person{i:05d}@domain{i % DOMAINS:02d}.example",
        f"EMAIL;TYPE=INTERNET,HOME:p{i}@home.example",
        f"TEL;TYPE=CELL:+49 30 {i:07d}",
        f"ORG:Company {i % 37}",
        f"NOTE:Card number {i} for the benchmark",
    ]
    if i % 10 == 0:
        photo = base64.b64encode(hashlib.sha256(str(i).encode()).digest() * 64).decode()
        lines.append(f"PHOTO;ENCODING=b;TYPE=JPEG:{photo}")
    lines.append("END:VCARD")
    return "\r\n".join(lines) + "\r\n"


def uids(body: bytes) -> list[str]:
    root = etree.fromstring(body)
    found = []
    for data in root.iter(f"{{{C}}}address-data"):
        match = re.search(r"^UID:(.*?)\r?$", data.text or "", re.MULTILINE)
        if match:
            found.append(match.group(1))
    return sorted(found)


def timed_queries(client: Client, path: str, needle: str, runs: int) -> tuple[float, list[str]]:
    headers = {"Depth": "1", "Content-Type": "application/xml; charset=utf-8"}
    status, body = client.request("REPORT", path, QUERY.format(needle=needle), headers)
    if status != 207:
        raise SystemExit(f"REPORT on {path} answered {status}: {body[:300]!r}")
    answer = uids(body)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        status, body = client.request("REPORT", path, QUERY.format(needle=needle), headers)
        times.append((time.perf_counter() - started) * 1000)
        if status != 207 or uids(body) != answer:
            raise SystemExit(f"REPORT on {path} changed its answer")
    return statistics.median(times), answer


def load_oxidav(client: Client, cards: int) -> float:
    started = time.perf_counter()
    for i in range(cards):
        status, body = client.request(
            "PUT",
            f"/remote.php/dav/addressbooks/users/{USER}/contacts/c{i:05d}.vcf",
            vcard(i),
            {"Content-Type": "text/vcard; charset=utf-8"},
        )
        if status != 201:
            raise SystemExit(f"oxidav PUT answered {status}: {body[:300]!r}")
    return time.perf_counter() - started


def load_radicale(client: Client, cards: int) -> float:
    started = time.perf_counter()
    status, body = client.request("MKCOL", f"/{USER}/contacts/", MKCOL)
    if status != 201:
        raise SystemExit(f"Radicale MKCOL answered {status}: {body[:300]!r}")
    everything = "".join(vcard(i) for i in range(cards))
    status, body = client.request(
        "PUT", f"/{USER}/contacts/", everything, {"Content-Type": "text/vcard; charset=utf-8"}
    )
    if status not in (201, 204):
        raise SystemExit(f"Radicale PUT answered {status}: {body[:300]!r}")
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench carddav_vs_radicale")
    parser.add_argument("--cards", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--database-url", default="", help="oxidav database (default SQLite)")
    parser.add_argument("--target", type=float, default=10.0)
    parser.add_argument("--strict", action="store_true", help="fail unless --target is reached")
    args = parser.parse_args(argv)
    needles = {
        "selective (1 card)": f"person{args.cards // 2:05d}@",
        "broad (1 % of cards)": "@domain07.example",
    }
    with (
        tempfile.TemporaryDirectory() as tmp,
        side_by_side(Path(tmp), args.database_url) as (ox_client, rad_client),
    ):
        ox_load = load_oxidav(ox_client, args.cards)
        rad_load = load_radicale(rad_client, args.cards)
        print(
            f"cards: {args.cards}; oxidav load {ox_load:.1f} s ({args.cards} PUTs), "
            f"Radicale load {rad_load:.1f} s (one collection PUT)"
        )
        ok = True
        ratios = []
        for label, needle in needles.items():
            ox_ms, ox_uids = timed_queries(
                ox_client,
                f"/remote.php/dav/addressbooks/users/{USER}/contacts/",
                needle,
                args.runs,
            )
            rad_ms, rad_uids = timed_queries(rad_client, f"/{USER}/contacts/", needle, args.runs)
            same = ox_uids == rad_uids and bool(ox_uids)
            ratio = rad_ms / ox_ms
            ratios.append(ratio)
            print(
                f"{label:22s} results {len(ox_uids):4d}  oxidav {ox_ms:8.1f} ms  "
                f"Radicale {rad_ms:8.1f} ms  speed-up {ratio:6.1f}x  "
                f"{'same answers' if same else 'ANSWERS DIFFER'}"
            )
            ok = ok and same and ratio > 1
        reached = min(ratios) >= args.target
        print(f"target {args.target:.0f}x: {'reached' if reached else 'NOT reached'}")
        ok = ok and (reached or not args.strict)
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1

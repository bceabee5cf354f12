"""PROPFIND Depth:1 of folders of 500 and 5000 files: oxidav vs WsgiDAV's FilesystemProvider.

Both servers hold the same folders (1 KiB files). For each folder and body (four named props:
getetag, getlastmodified, getcontentlength, resourcetype; and allprop) one warm-up, then
``--runs`` timed requests on one keep-alive connection; the median is reported, with the
server's RSS before the series and its peak during it, warm-up included (VmHWM is reset first:
the first request's argon2 password check, 64 MiB, would otherwise be the peak of every series).
Both answers must list the same names with
the same lengths. Gate (issue 8): oxidav's named-prop median is at most 0.25x the
FilesystemProvider's for every folder, and the 5000-file listing grows oxidav's peak RSS by
less than 50 MB; the run exits 1 otherwise.

    python -m bench files_propfind [--sizes 500,5000] [--runs 10] [--db-url URL]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote

from lxml import etree

from bench._files_servers import (
    Server,
    add_alice,
    alice_tree,
    filesystem_server,
    median_ms,
    oxidav_env,
    oxidav_server,
)

NAMED = (
    b'<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/>'
    b"<d:getlastmodified/><d:getcontentlength/><d:resourcetype/></d:prop></d:propfind>"
)
BODIES = {"named4": NAMED, "allprop": b""}
#: The Nextcloud desktop client's listing (its sync engine's PROPFIND, without the optional
#: encryption and lock properties): not a figure of this benchmark's, but of ``files_gate``.
NEXTCLOUD = (
    b'<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">'
    b"<d:prop><d:resourcetype/><d:getlastmodified/><d:getcontentlength/><d:getetag/>"
    b"<oc:size/><oc:id/><oc:fileid/><oc:downloadURL/><oc:dDC/><oc:permissions/><oc:checksums/>"
    b"<oc:share-types/></d:prop></d:propfind>"
)
#: Properties whose values differ between two installations holding the same files.
VOLATILE = frozenset({"{DAV:}getetag", "{DAV:}getlastmodified", "{http://owncloud.org/ns}id"})
CONTENT = b"x" * 1024


def populate_filesystem(root: Path, sizes: list[int], folders: int = 0) -> None:
    """Folders ``f<size>`` of ``size`` files each, and (``folders``) ``d<folders>`` of that
    many empty folders."""
    for size in sizes:
        folder = root / f"f{size}"
        folder.mkdir(parents=True)
        for i in range(size):
            (folder / f"file{i:05d}.txt").write_bytes(CONTENT)
    for i in range(folders):
        (root / f"d{folders}" / f"sub{i:05d}").mkdir(parents=True)


def populate_oxidav(env: dict[str, str], sizes: list[int], folders: int = 0) -> None:
    """``populate_filesystem``'s tree, straight through the tree API (PUT speed is another
    benchmark)."""
    from oxidav.tree import make_folder, write_file

    with alice_tree(env) as (db, chain, user_id):
        content = chain.ingest([CONTENT])
        for size in sizes:
            with db.write() as session:
                make_folder(session, user_id, f"/f{size}")
                for i in range(size):
                    write_file(session, chain, user_id, f"/f{size}/file{i:05d}.txt", content)
        if folders:
            with db.write() as session:
                make_folder(session, user_id, f"/d{folders}")
                for i in range(folders):
                    make_folder(session, user_id, f"/d{folders}/sub{i:05d}")


def listing(body: bytes) -> dict[str, str]:
    """``{name: getcontentlength}`` of the members of a Depth:1 multistatus."""
    tree = etree.fromstring(body)
    result = {}
    for response in tree.iter("{DAV:}response"):
        href = unquote(response.findtext("{DAV:}href") or "").rstrip("/")
        length = response.findtext(".//{DAV:}getcontentlength") or ""
        result[href.rsplit("/", 1)[-1]] = length
    return result


#: ``{href: {property: (status, text)}}``.
Propstats = dict[str, dict[str, tuple[str, str]]]


def propstats(body: bytes) -> Propstats:
    """``{href: {property: (status, text)}}`` of a multistatus, the text of ``VOLATILE``
    properties left out: what two installations holding the same files must both answer."""
    found: Propstats = {}
    for response in etree.fromstring(body).iter("{DAV:}response"):
        props = found.setdefault(unquote(response.findtext("{DAV:}href") or ""), {})
        for propstat in response.iter("{DAV:}propstat"):
            status = propstat.findtext("{DAV:}status") or ""
            for prop in propstat.iterfind("{DAV:}prop/*"):
                text = "" if prop.tag in VOLATILE else "".join(prop.itertext())
                props[str(prop.tag)] = (status, text)
    return found


def measure(server: Server, folder: str, body: bytes, runs: int) -> tuple[float, int, int, bytes]:
    client = server.client()
    headers = {"Depth": "1", "Content-Type": "application/xml"}
    # The peak of this series (warm-up included), not of the process: the first request's
    # password check (argon2, 64 MiB) set a higher one than any listing.
    client.request("OPTIONS", "")
    server.reset_peak()
    before = server.rss_kb()
    status, answer, _ = client.request("PROPFIND", folder, body or None, headers)
    assert status == 207, (server.name, status)
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        status, answer, _ = client.request("PROPFIND", folder, body or None, headers)
        samples.append(time.perf_counter() - started)
        assert status == 207
    client.close()
    return median_ms(samples), before, server.rss_kb("VmHWM"), answer


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench files_propfind")
    parser.add_argument("--sizes", default="500,5000")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--db-url", default=None, help="an empty PostgreSQL database (optional)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[tuple[str, int, str], tuple[float, int, int]] = {}
    answers: dict[tuple[str, int], dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "fs"
        populate_filesystem(root, sizes)
        env = oxidav_env(Path(tmp) / "oxidav", args.db_url)
        add_alice(env)
        populate_oxidav(env, sizes)
        for make in (lambda: filesystem_server(root), lambda: oxidav_server(env)):
            with make() as server:
                for size in sizes:
                    for label, body in BODIES.items():
                        ms, rss, peak, answer = measure(server, f"f{size}/", body, args.runs)
                        results[(server.name, size, label)] = (ms, rss, peak)
                        if label == "named4":
                            answers[(server.name, size)] = listing(answer)
    ok = True
    print(
        "| folder | body | FilesystemProvider ms | oxidav ms | ratio | oxidav RSS MB before/peak |"
    )
    print("|---|---|---|---|---|---|")
    for size in sizes:
        for label in BODIES:
            fs_ms = results[("FilesystemProvider", size, label)][0]
            ox_ms, rss, peak = results[("oxidav", size, label)]
            print(
                f"| {size} | {label} | {fs_ms:.0f} | {ox_ms:.0f} | {ox_ms / fs_ms:.2f} | "
                f"{rss / 1024:.0f} → {peak / 1024:.0f} |"
            )
        fs_names = {k: v for k, v in answers[("FilesystemProvider", size)].items() if v}
        ox_names = {k: v for k, v in answers[("oxidav", size)].items() if v}
        if fs_names != ox_names or len(ox_names) != size:
            print(f"DIFFERENT ANSWERS for the {size}-file folder")
            ok = False
        ratio = (
            results[("oxidav", size, "named4")][0]
            / results[("FilesystemProvider", size, "named4")][0]
        )
        if ratio > 0.25:
            print(f"FAIL: named4 on {size} files is {ratio:.2f}x the FilesystemProvider (> 0.25x)")
            ok = False
    largest = max(sizes)
    growth = max(
        results[("oxidav", largest, label)][2] - results[("oxidav", largest, label)][1]
        for label in BODIES
    )
    print(f"oxidav peak RSS growth on the {largest}-file listing: {growth / 1024:.1f} MB")
    if growth > 50 * 1024:
        print("FAIL: RSS growth of 50 MB or more")
        ok = False
    return 0 if ok else 1

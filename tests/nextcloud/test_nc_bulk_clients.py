"""Bulk upload bodies as real desktop clients send them, and who is offered bulk upload.

``data/nc373_*.http`` are requests recorded from the installed ``nextcloudcmd`` 3.7.3 through a
byte-logging TCP proxy (Host and Authorization lines removed):

- ``nc373_bulk_unicode.http``: a batch of three files with Unicode and space names.
- ``nc373_bulk_with_empty_file.http``: the whole request of a batch holding an empty file: the
  head announces ``Content-Length: 1232`` and not one body byte follows (the client aborts the
  POST itself, "Network error: 99"; ``oxidav.nextcloud.client_version``).

The bodies are replayed to the reader in memory, cut at every offset, and over real HTTP.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import socket
from pathlib import Path
from urllib.parse import quote

import pytest

from oxidav.nextcloud.bulk.multipart import MultipartError, MultipartReader, boundary_of
from oxidav.nextcloud.client_version import desktop_version, offers_bulk
from oxidav.settings import Settings, SettingsError, load_settings
from tests.support.live import LiveServer

DATA = Path(__file__).parent / "data"
BULK = "/remote.php/dav/bulk"
DAV_ALICE = "/remote.php/dav/files/alice/"
UA_373 = "Mozilla/5.0 (Linux) mirall/3.7.3git (nextcloudcmd, debian ClientArchitecture: x86_64)"
UA_3_10 = "Mozilla/5.0 (Linux) mirall/3.10.0 (Nextcloud, ubuntu ClientArchitecture: x86_64)"
UNICODE_FILES = {
    "/a b.txt": b"hello world\n",
    "/dossier été/日本語 ファイル.txt": "ünïcödé content\n".encode(),
}


def _recorded(name: str) -> tuple[dict[str, str], bytes]:
    """The head (lower-cased names) and the body of a recorded request."""
    raw = (DATA / name).read_bytes()
    head, _, body = raw.partition(b"\r\n\r\n")
    headers: dict[str, str] = {}
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.decode("utf-8").partition(":")
        headers[key.strip().lower()] = value.strip()
    return headers, body


def _parse(body: bytes, content_type: str) -> list[tuple[dict[str, str], bytes]]:
    reader = MultipartReader(io.BytesIO(body), boundary_of(content_type), len(body))
    return [(part.headers, b"".join(part.body)) for part in reader.parts()]


def test_recorded_373_batch_parses_exactly() -> None:
    head, body = _recorded("nc373_bulk_unicode.http")
    assert int(head["content-length"]) == len(body)
    parts = _parse(body, head["content-type"])
    paths = [headers["x-file-path"] for headers, _ in parts]
    assert paths == [
        "/a b.txt",
        "/dossier été/Ωmega straße.bin",
        "/dossier été/日本語 ファイル.txt",
    ]
    for headers, data in parts:
        assert int(headers["content-length"]) == len(data)
        assert headers["x-file-md5"] == hashlib.md5(data).hexdigest()
        assert headers["x-file-mtime"] == "1700000000"
        if headers["x-file-path"] in UNICODE_FILES:
            assert data == UNICODE_FILES[headers["x-file-path"]]


def test_recorded_373_batch_cut_anywhere_is_a_clean_error() -> None:
    """A client that stops sending mid-body (the 3.7 abort) gives an "ends" reason at every
    cut point, never a header-syntax complaint about a cut line nor any other exception."""
    head, body = _recorded("nc373_bulk_unicode.http")
    for cut in range(len(body) - len(b"--\r\n")):
        with pytest.raises(MultipartError) as caught:
            _parse(body[:cut], head["content-type"])
        assert "ends" in str(caught.value), (cut, str(caught.value))
    # The last delimiter may lose its CRLF (RFC 2046: the close delimiter ends the body).
    assert len(_parse(body[: len(body) - 2], head["content-type"])) == 3


def test_mid_header_cut_is_reported_as_an_early_end() -> None:
    """The message a 13k-file seed logged (``malformed part header b'X-File-Mtime'``) was a
    body cut inside a header line: it is now reported as such."""
    head, body = _recorded("nc373_bulk_unicode.http")
    cut = body.index(b"X-File-Mtime") + len(b"X-File-Mtime")
    with pytest.raises(MultipartError, match="body ends inside part headers"):
        _parse(body[:cut], head["content-type"])


def test_recorded_373_empty_file_batch_has_no_body() -> None:
    head, body = _recorded("nc373_bulk_with_empty_file.http")
    assert body == b"" and int(head["content-length"]) == 1232
    assert desktop_version(head["user-agent"]) == (3, 7, 3)
    with pytest.raises(MultipartError, match="body ends before the opening boundary"):
        _parse(body, head["content-type"])


def _with_empty_part(body: bytes, content_type: str) -> bytes:
    """The recorded batch plus an empty file, laid out as clients from 3.9 (desktop#5871,
    ``QHttpPart::setBody({})``) send it: the part's head, the blank line, no bytes, CRLF."""
    boundary = boundary_of(content_type).encode()
    closing = b"--" + boundary + b"--\r\n"
    assert body.endswith(closing)
    part = (
        b"--" + boundary + b"\r\nContent-Length: 0\r\nContent-Type: application/octet-stream\r\n"
        b"X-File-MD5: d41d8cd98f00b204e9800998ecf8427e\r\nX-File-Mtime: 1700000000\r\n"
        + "X-File-Path: /dossier été/vide ü.txt\r\n\r\n\r\n".encode()
    )
    return body[: -len(closing)] + part + closing


def _replay(server: LiveServer, body: bytes, content_type: str, user_agent: str) -> dict[str, dict]:
    headers = {"Content-Type": content_type, "User-Agent": user_agent}
    resp = server.request("POST", BULK, body, headers=headers)
    assert resp.status == 200, resp.text
    result: dict[str, dict] = json.loads(resp.body)
    return result


def test_recorded_bodies_over_http(live_server: LiveServer) -> None:
    """The recorded 3.7.3 batch, and the same batch with an empty part as 3.9+ sends it, land
    byte-exact (read back over WebDAV) with the sent mtime, keyed by the sent paths."""
    head, body = _recorded("nc373_bulk_unicode.http")
    make = live_server.request("MKCOL", DAV_ALICE + quote("dossier été"))
    assert make.status == 201
    result = _replay(live_server, body, head["content-type"], UA_373)
    assert set(result) == {"/a b.txt", "/dossier été/Ωmega straße.bin", *UNICODE_FILES}
    assert all(entry["error"] is False for entry in result.values()), result

    result = _replay(
        live_server, _with_empty_part(body, head["content-type"]), head["content-type"], UA_3_10
    )
    assert result["/dossier été/vide ü.txt"]["error"] is False, result
    for path, data in {**UNICODE_FILES, "/dossier été/vide ü.txt": b""}.items():
        got = live_server.request("GET", "/remote.php/dav/files/alice" + quote(path))
        assert got.status == 200 and got.body == data, path
        assert got.headers["last-modified"] == "Tue, 14 Nov 2023 22:13:20 GMT"


def test_recorded_empty_file_head_over_http(live_server: LiveServer) -> None:
    """The 3.7.3 request that never sends its body: 400 with the reason once the client hangs
    up, not a 500 and not a hang; and the server keeps serving."""
    raw = (DATA / "nc373_bulk_with_empty_file.http").read_bytes()
    request_line, _, rest = raw.partition(b"\r\n")
    auth = b"Authorization: Basic YWxpY2U6c2VjcmV0\r\nHost: 127.0.0.1\r\n"
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=30) as conn:
        conn.sendall(request_line + b"\r\n" + auth + rest)
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert b"body ends before the opening boundary" in answer
    assert live_server.request("GET", "/remote.php/dav/files/alice/").status in (200, 207, 405)


@pytest.mark.parametrize(
    ("user_agent", "offered"),
    [
        (UA_373, False),
        ("Mozilla/5.0 (Windows) mirall/3.4.0 (Nextcloud, windows-10.0)", False),
        ("Mozilla/5.0 (Macintosh) mirall/3.9.0 (Nextcloud, macos)", False),
        (UA_3_10, True),
        ("Mozilla/5.0 (Linux) mirall/3.16.3daily (Nextcloud, fedora)", True),
        ("Mozilla/5.0 (Android) Nextcloud-android/3.30.1", True),
        ("", True),
    ],
)
def test_bulk_is_offered_by_client_version(
    live_server: LiveServer, user_agent: str, offered: bool
) -> None:
    resp = live_server.request(
        "GET",
        "/ocs/v1.php/cloud/capabilities?format=json",
        headers={"User-Agent": user_agent, "OCS-APIRequest": "true"},
        user=None,
    )
    dav = json.loads(resp.body)["ocs"]["data"]["capabilities"]["dav"]
    assert ("bulkupload" in dav) is offered, (user_agent, dav)
    assert dav["chunking"] == "1.0"


def test_bulk_offer_settings() -> None:
    assert offers_bulk(UA_373, True, "0") is True
    assert offers_bulk(UA_373, True, "3.7.3") is True
    assert offers_bulk(UA_373, True, "3.7.4") is False
    assert offers_bulk(UA_3_10, False, "0") is False
    assert offers_bulk("", False, "0") is False
    assert Settings().nextcloud_bulk_min_desktop == "3.10"
    for bad in ("3.x", "", "3.10.0.1", "latest"):
        with pytest.raises(SettingsError, match="nextcloud_bulk_min_desktop"):
            load_settings(env={"OXIDAV_NEXTCLOUD_BULK_MIN_DESKTOP": bad})


def _mutations(body: bytes, count: int, seed: int) -> list[bytes]:
    """``count`` variants of ``body``: bytes flipped, removed, duplicated or CRLFs dropped."""
    rng = random.Random(seed)
    variants = []
    for _ in range(count):
        data = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            kind = rng.randrange(4)
            if kind == 0:
                data[at] = rng.randrange(256)
            elif kind == 1:
                del data[at : at + rng.randint(1, 40)]
            elif kind == 2:
                data[at:at] = data[at : at + rng.randint(1, 40)]
            else:
                crlf = data.find(b"\r\n", at)
                if crlf >= 0:
                    del data[crlf : crlf + 2]
        variants.append(bytes(data))
    return variants


def test_mutated_recorded_bodies_parse_or_fail_cleanly() -> None:
    head, body = _recorded("nc373_bulk_unicode.http")
    for variant in _mutations(body, 3000, seed=26):
        try:
            for _, data in _parse(variant, head["content-type"]):
                assert len(data) <= len(variant)
        except MultipartError:
            pass


def test_mutated_recorded_bodies_over_http_answer_200_or_400(live_server: LiveServer) -> None:
    """Garbage never gets a 500: each answer is 200 (per-file results) or 400 with a reason,
    and the server goes on serving."""
    head, body = _recorded("nc373_bulk_unicode.http")
    assert live_server.request("MKCOL", DAV_ALICE + quote("dossier été")).status == 201
    for variant in _mutations(body, 40, seed=7):
        headers = {"Content-Type": head["content-type"], "User-Agent": UA_373}
        resp = live_server.request("POST", BULK, variant, headers=headers)
        assert resp.status in (200, 400), (resp.status, resp.text)
        if resp.status == 400:
            assert "bad multipart" in resp.text
    assert live_server.request("PROPFIND", DAV_ALICE, headers={"Depth": "1"}).status == 207

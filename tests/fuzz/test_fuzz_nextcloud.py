"""Fuzzed Nextcloud uploads: bulk ``multipart/related`` bodies (POST /remote.php/dav/bulk) and
chunked-upload v2 sequences (/remote.php/dav/uploads/...). Properties: see
tests/fuzz/conftest.py."""

from __future__ import annotations

import hashlib
from urllib.parse import quote

from hypothesis import example, given
from hypothesis import strategies as st

from tests.support.fuzz import FILES, UPLOADS, Fuzz
from tests.support.raw_http import build_request

BOUNDARY = "fuzz_boundary"
_junk = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30)
_file_paths = (
    st.sampled_from(
        [
            "/bulk.txt",
            "/sub/bulk.txt",
            "/../x",
            "/%2e%2e/x",
            "",
            "/",
            "//x",
            "/sub",
            "/a.txt/x",
            "/nope/x",
            "\\x",
            "/\u00e9.txt",
            "/x\x00y",
            "/" + "l" * 300,
        ]
    )
    | _junk
)


@st.composite
def _part(draw: st.DrawFn) -> bytes:
    data = draw(st.binary(max_size=64))
    headers = {
        "Content-Length": draw(
            st.sampled_from([str(len(data))] * 3 + ["-1", "x", "999999999", "0", ""])
        ),
        "X-File-MD5": draw(st.sampled_from([hashlib.md5(data).hexdigest(), "", "0" * 32, "zz"])),
        "X-File-Mtime": draw(
            st.sampled_from(["1700000000", "", "-1", "1e300", "99999999999999999999"])
        ),
        "X-File-Path": draw(_file_paths),
        "Content-Type": "application/octet-stream",
    }
    dropped = draw(st.lists(st.sampled_from(sorted(headers)), max_size=2))
    lines = [f"--{BOUNDARY}"] + [f"{k}: {v}" for k, v in headers.items() if k not in dropped]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape") + data + b"\r\n"


@st.composite
def _bulk_body(draw: st.DrawFn) -> bytes:
    body = b"".join(draw(st.lists(_part(), max_size=4)))
    body += draw(st.sampled_from([f"--{BOUNDARY}--\r\n".encode(), b"", b"--other--\r\n"]))
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(body)))
        body = body[:cut] + draw(st.binary(max_size=8))
    return body


@given(
    body=_bulk_body(),
    content_type=st.sampled_from(
        [
            f'multipart/related; boundary="{BOUNDARY}"',
            f"multipart/related; boundary={BOUNDARY}",
            "multipart/related",
            "text/plain",
            'multipart/related; boundary=""',
            "multipart/related; boundary=" + "b" * 80,
        ]
    ),
)
def test_bulk_upload(fuzz: Fuzz, body: bytes, content_type: str) -> None:
    request = build_request("POST", "/remote.php/dav/bulk", {"Content-Type": content_type}, body)
    fuzz.send(request, "POST")
    fuzz.seed()


_chunk_names = (
    st.sampled_from(["1", "2", "00001", "10", ".file", "-1", "x", "..", "%2e%2e", "a/b", ""])
    | _junk
)
_step = st.one_of(
    st.tuples(
        st.just("MKCOL"),
        st.just(""),
        st.dictionaries(
            st.sampled_from(["Destination", "OC-Total-Length"]), _junk | st.just("5"), max_size=2
        ),
    ),
    st.tuples(
        st.just("PUT"),
        _chunk_names,
        st.dictionaries(
            st.sampled_from(["OC-Chunk-Offset", "OC-Total-Length", "Destination"]),
            _junk | st.sampled_from(["0", "3", "-1"]),
            max_size=2,
        ),
    ),
    st.tuples(st.just("DELETE"), _chunk_names, st.just({})),
    st.tuples(st.just("PROPFIND"), st.just(""), st.just({"Depth": "1"})),
    st.tuples(
        st.just("MOVE"),
        st.just(".file"),
        st.fixed_dictionaries(
            {
                "Destination": st.sampled_from(
                    [
                        f"{FILES}/assembled.bin",
                        f"{FILES}/sub/",
                        f"{FILES}/a.txt",
                        "/remote.php/dav/files/bob/x",
                        f"{FILES}/%2e%2e/x",
                        "",
                    ]
                )
                | _junk
            },
            optional={
                "OC-Total-Length": st.sampled_from(["0", "3", "6", "-1", "99999999999"]) | _junk,
                "X-OC-Mtime": st.sampled_from(["1600000000", "-1", "1e300", "x"]),
                "OC-Checksum": st.sampled_from(["SHA1:" + "0" * 40, "MD5:", "x"]),
                "If": st.sampled_from(['(["x"])', "(<x>)", "("]),
                "Overwrite": st.sampled_from(["T", "F", "x"]),
            },
        ),
    ),
)


@given(
    session=st.sampled_from(["s1", "2", "..", "%2e%2e", "a%2fb", "x" * 200]) | _junk,
    steps=st.lists(_step, min_size=1, max_size=4),
)
@example(session="..", steps=[("PUT", "", {})])  # a PUT of the uploads root: was 500
def test_chunked_upload_sequences(
    fuzz: Fuzz, session: str, steps: list[tuple[str, str, dict[str, str]]]
) -> None:
    for method, name, headers in steps:
        path = f"{UPLOADS}/{quote(session)}/{quote(name)}"
        body = b"abc" if method == "PUT" else b""
        fuzz.send(
            build_request(method, path.encode("utf-8", "surrogateescape"), headers, body), method
        )
    fuzz.live.request("DELETE", f"{UPLOADS}/{quote(session)}/")
    fuzz.seed()

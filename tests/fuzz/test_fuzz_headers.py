"""Fuzzed request headers: Depth, Destination, If, Overwrite, Range, Timeout, the OC-* and
X-OC-Mtime headers, and a Content-Length that disagrees with the body. Properties: see
tests/fuzz/conftest.py."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from tests.support.fuzz import FILES, Fuzz
from tests.support.raw_http import build_request

_junk = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40
) | st.sampled_from(["", " ", "\t", "-1", "0", "1e9", "99999999999999999999999", "nan", "\u00e9"])
_numbers = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["", "0x10", "1.5", " 7", "+3", "inf", "1_000", "٣"]),
    _junk,
)
_etag = st.sampled_from(['"x"', "[", '["a"]', "W/", "*", ""]) | _junk
_if = st.one_of(
    st.builds(
        lambda tag, state, tok, neg: f"<{tag}> ({neg}<{tok}> [{state}])",
        st.sampled_from([f"http://127.0.0.1{FILES}/a.txt", f"{FILES}/a.txt", "", "<", "x:y"]),
        _etag,
        st.sampled_from(["urn:uuid:x", "opaquelocktoken:00000000-0000", "DAV:no-lock", ""]),
        st.sampled_from(["", "Not ", "not "]),
    ),
    st.sampled_from(["(", ")", "(<", "([", "<a> (", "(Not)", "(Not <x>)", "<> ()"]),
    _junk,
)
_destinations = st.one_of(
    st.builds(
        lambda host, path: host + path,
        st.sampled_from(["http://127.0.0.1", "https://evil.example", "", "//x", "http://[::1"]),
        st.sampled_from(
            [
                f"{FILES}/moved.txt",
                f"{FILES}/sub/",
                f"{FILES}/a.txt",
                f"{FILES}/%2e%2e/x",
                "/remote.php/dav/files/bob/x",
                "/remote.php/dav/calendars/alice/personal/x.ics",
                f"{FILES}/",
                "/",
                "",
                f"{FILES}/\\..\\x",
                f"{FILES}/%00",
                f"{FILES}/%ff",
            ]
        ),
    ),
    _junk,
)
_range = st.one_of(
    st.builds(
        lambda a, b: f"bytes={a}-{b}",
        st.sampled_from(["", "0", "1", "4", "5", "99999999999999999999", "-1", "x"]),
        st.sampled_from(["", "0", "2", "4", "1000", "99999999999999999999", "-3"]),
    ),
    st.sampled_from(
        [
            "bytes=0-0,1-1,2-2",
            "bytes=" + ",".join(["0-"] * 200),
            "items=0-1",
            "bytes=",
            "bytes=-",
            "bytes=--1",
        ]
    ),
    _junk,
)
_timeout = st.one_of(
    st.sampled_from(
        [
            "Infinite",
            "Second-0",
            "Second-4100000000",
            "Second--1",
            "Second-x",
            "Second-1, Infinite",
            "Seconds-10",
            "Second-99999999999999999999",
        ]
    ),
    _junk,
)
_mtime = st.one_of(_numbers, st.sampled_from(["1e300", "-62135596800", "253402300800"]))

HEADERS = {
    "Depth": st.sampled_from(["0", "1", "infinity", "Infinity", "2", "-1", "", "1,1"]) | _junk,
    "Destination": _destinations,
    "If": _if,
    "Overwrite": st.sampled_from(["T", "F", "t", "f", "", "TF", "yes"]) | _junk,
    "Range": _range,
    "If-Range": _etag,
    "If-Match": _etag,
    "If-None-Match": _etag,
    "Timeout": _timeout,
    "OC-Total-Length": _numbers,
    "OC-Chunked": st.sampled_from(["1", "0", "true", ""]) | _junk,
    "OC-Checksum": st.sampled_from(["SHA1:", "MD5:x", "SHA256:" + "0" * 64, ":", "ADLER32:1"])
    | _junk,
    "X-OC-Mtime": _mtime,
    "X-OC-Ctime": _mtime,
    "OC-Chunk-Offset": _numbers,
    "Content-Type": st.sampled_from(["text/plain", "application/xml", "multipart/related", ""])
    | _junk,
    "Content-Range": st.sampled_from(["bytes 0-3/5", "bytes */5", "bytes 9-1/2"]) | _junk,
}
_header_sets = st.dictionaries(st.sampled_from(sorted(HEADERS)), st.none(), max_size=5).flatmap(
    lambda names: st.fixed_dictionaries({name: HEADERS[name] for name in names})
)
METHODS = ["GET", "HEAD", "PUT", "PROPFIND", "DELETE", "MOVE", "COPY", "LOCK", "UNLOCK", "MKCOL"]


@given(
    method=st.sampled_from(METHODS),
    headers=_header_sets,
    target=st.sampled_from(["file", "folder"]),
)
@example(method="MOVE", headers={"Destination": "http://[::1"}, target="file")  # was 500
def test_headers(fuzz: Fuzz, method: str, headers: dict[str, str], target: str) -> None:
    path = fuzz.fresh(target)
    if method == "MKCOL":
        path = path.rstrip("/") + "-new/"
    body = b"fuzzed body" if method == "PUT" else b""
    fuzz.send(build_request(method, path, headers, body), method, reads=(path,))


@given(
    method=st.sampled_from(["PUT", "PROPFIND", "PROPPATCH", "GET", "POST"]),
    body=st.binary(max_size=64),
    announced=st.integers(0, 200),
)
def test_content_length_disagrees_with_body(
    fuzz: Fuzz, method: str, body: bytes, announced: int
) -> None:
    path = fuzz.fresh("file")
    request = build_request(method, path, {}, body, content_length=announced)
    if announced > len(body):
        # The server waits for the rest; the client then stops sending: any framed answer or a
        # clean close, never a 5xx.
        fuzz.send(request, method, half_close=True, reads=(path,))
    else:
        # The surplus bytes are the next "request" on the connection: the first answer must
        # still be framed, but a keep-alive follow-up would be mixed with the surplus.
        fuzz.send(request, method, keepalive_check=False, reads=(path,))

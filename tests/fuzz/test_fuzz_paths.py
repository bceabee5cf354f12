"""Fuzzed request paths: percent-encodings, dots and ``%2e%2e``, backslashes, NUL, overlong and
invalid UTF-8, raw non-ASCII bytes, very long paths — under every URL space, with reading and
writing methods. Properties: see tests/fuzz/conftest.py."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from tests.support.fuzz import Fuzz
from tests.support.raw_http import build_request

PREFIXES = [
    "/remote.php/dav/files/alice/",
    "/remote.php/dav/files/alice/sub/",
    "/remote.php/webdav/",
    "/remote.php/dav/calendars/alice/personal/",
    "/remote.php/dav/addressbooks/users/alice/contacts/",
    "/remote.php/dav/uploads/alice/",
    "/remote.php/dav/trashbin/alice/trash/",
    "/remote.php/dav/principals/users/alice/",
    "/remote.php/dav/",
    "/public.php/dav/files/token/",
    "/s/",
    "/index.php/s/",
    "/ocs/v2.php/apps/files_sharing/api/v1/shares/",
    "/status.php",
    "/",
    "",
    "*",
    "http://127.0.0.1/remote.php/dav/files/alice/",
]
SEGMENTS = [
    "..",
    ".",
    "%2e%2e",
    "%2E%2e",
    "%2e",
    ".%2e",
    "%252e%252e",
    "%00",
    "\\",
    "%5c",
    "..%5c",
    "..\\",
    "%c0%ae%c0%ae",
    "%c0%af",
    "%e0%80%ae",
    "%ff",
    "%80",
    "%e2%82",
    "%ed%a0%80",
    "//",
    "%2f",
    "a.txt",
    "sub",
    "seed.ics",
    "seed.vcf",
    ";x=1",
    "%3b",
    "?q=1",
    "#frag",
    "%23",
    "%3f",
    "%",
    "%g1",
    "%0a",
    "%0d%0a",
    "%20",
    " ",
    "~",
    "caf\u00e9",
    "%e2%80%ae",
    "\u202e",
    "bob",
    "alice",
    ".file",
    "x" * 255,
    "y" * 300,
]
_segment = st.one_of(
    st.sampled_from(SEGMENTS),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12).map(
        lambda t: "".join(f"%{b:02x}" for b in t.encode())
    ),
)
_paths = st.builds(
    lambda prefix, segments, tail: (prefix + "/".join(segments) + tail).encode(
        "utf-8", "surrogateescape"
    ),
    st.sampled_from(PREFIXES),
    st.lists(_segment, max_size=8),
    st.sampled_from(["", "/", "/.", "%2f"]),
)
_raw = st.builds(lambda path, junk: path + junk, _paths, st.binary(max_size=6))
_long = st.integers(1, 64).map(lambda kib: b"/remote.php/dav/files/alice/" + b"a/" * (kib * 512))
PATHS = st.one_of(_paths, _paths, _raw, _long)

CLIMB = b"/remote.php/dav/files/alice/x/" + b"%2e%2e/" * 6 + b"etc/passwd"


@given(path=PATHS, method=st.sampled_from(["GET", "HEAD", "PROPFIND", "OPTIONS"]))
@example(path=CLIMB, method="GET")  # issue 24 case 7: 400 with Content-Length and no body
@example(path=b"/remote.php/dav/files/alice/../../../../..", method="GET")  # the same
@example(path=b"/remote.php/dav/files/alice/\x80", method="GET")  # closed, no answer
def test_reading_paths(fuzz: Fuzz, path: bytes, method: str) -> None:
    fuzz.send(build_request(method, path, {"Depth": "0"}), method, writes=False)


@given(path=PATHS, method=st.sampled_from(["PUT", "MKCOL", "DELETE", "PROPPATCH", "LOCK"]))
@example(path=CLIMB, method="PUT")
@example(path=b"", method="PUT")  # an empty request target: closed, no answer
def test_writing_paths(fuzz: Fuzz, path: bytes, method: str) -> None:
    body = b"fuzz" if method == "PUT" else b""
    fuzz.send(build_request(method, path, {}, body), method)
    fuzz.seed()


@given(path=PATHS, method=st.sampled_from(["MOVE", "COPY"]))
@example(path=b"/remote.php/dav/files/alice/\n", method="MOVE")  # bare LF ends the head: no answer
def test_paths_as_destination(fuzz: Fuzz, path: bytes, method: str) -> None:
    source = fuzz.fresh("file")
    destination = path.decode("utf-8", "surrogateescape")
    if destination.startswith("/"):
        destination = "http://127.0.0.1" + destination
    fuzz.send(build_request(method, source, {"Destination": destination}), method)

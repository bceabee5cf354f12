"""GET and HEAD of a file: streamed from its manifest, with conditionals and byte ranges.

RFC 9110 §13 conditionals are evaluated here in §13.2.2's order (If-Match, else
If-Unmodified-Since -> 412; If-None-Match, else If-Modified-Since -> 304), comparing dates in
whole seconds as HTTP dates are (WsgiDAV answers 200 to an If-Modified-Since equal to the
Last-Modified it sent, and checks If-Unmodified-Since even when If-Match is present); the WebDAV
``If`` header goes through WsgiDAV's evaluation (412). Ranges follow §14: one
satisfiable range gives a 206 with Content-Range; several give a ``multipart/byteranges`` body
(§14.6), which WsgiDAV cannot produce (it serves only the first range); none satisfiable gives
416 with ``Content-Range: bytes */size``; an invalid Range header, or one that fails If-Range,
is ignored (200). The body is read chunk by chunk from the blob chain, so memory stays flat.
Every answer carries ``oxidav.download_headers`` (nosniff; an active type as a sandboxed
attachment), here and so through the public-link endpoints that serve with this reader.
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from wsgidav import util
from wsgidav.dav_error import (
    HTTP_NOT_MODIFIED,
    HTTP_PRECONDITION_FAILED,
    HTTP_RANGE_NOT_SATISFIABLE,
    DAVError,
)

from oxidav.download_headers import download_headers
from oxidav.environ import ENVIRON_NODE, ENVIRON_SENDS_FILE_REGIONS
from oxidav.providers.files.resources import FileResource

BLOCK = 256 * 1024
#: Overlapping ranges, or more than this many, are merged; if that leaves more than this many,
#: the Range header is ignored (RFC 9110 §14.2 allows it), so a request cannot multiply work.
MAX_RANGES = 64

Range = tuple[int, int]  # first byte, last byte (inclusive)
#: Last-Modified values kept by timestamp (a file's mtime is formatted once, not per request).
HTTP_DATES_KEPT = 4096
_http_dates: dict[float, str] = {}
_date_now: tuple[int, str] = (-1, "")


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_TWO_DIGITS = tuple(f"{n:02d}" for n in range(61))
#: The date part of an HTTP date (``Sun, 06 Dec 2026 ``) kept per day (its ordinal), at most
#: ``HTTP_DATES_KEPT`` of them.
_day_heads: dict[int, str] = {}
#: ``rfc3339_of``'s date part (``2026-12-06T``) per day, at most ``HTTP_DATES_KEPT``.
_rfc3339_days: dict[int, str] = {}


def rfc1123_date(stamp: float) -> str:
    """``util.get_rfc1123_time(stamp)`` (``email.utils.formatdate``, GMT), the same text at a
    quarter of the cost — a PROPFIND formats one per member. The second is the one
    ``datetime.fromtimestamp`` rounds to, as ``formatdate``'s."""
    return rfc1123_of(datetime.fromtimestamp(stamp, UTC))


def rfc1123_of(d: datetime) -> str:
    """``rfc1123_date(d.timestamp())`` of an aware UTC datetime, without the round trip through
    a float: a PROPFIND formats each member's mtime, already a UTC datetime. The day's part is
    formatted once per day, the time's from two-digit strings."""
    day = d.toordinal()
    head = _day_heads.get(day)
    if head is None:
        if len(_day_heads) >= HTTP_DATES_KEPT:
            _day_heads.clear()
        head = _day_heads[day] = (
            f"{_DAYS[d.weekday()]}, {d.day:02d} {_MONTHS[d.month]} {d.year:04d} "
        )
    return f"{head}{_TWO_DIGITS[d.hour]}:{_TWO_DIGITS[d.minute]}:{_TWO_DIGITS[d.second]} GMT"


def rfc3339_of(d: datetime) -> str:
    """``time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(d.timestamp()))`` of an aware UTC
    datetime (a creation date), its day's part formatted once per day."""
    day = d.toordinal()
    head = _rfc3339_days.get(day)
    if head is None:
        if len(_rfc3339_days) >= HTTP_DATES_KEPT:
            _rfc3339_days.clear()
        head = _rfc3339_days[day] = f"{d.year:04d}-{d.month:02d}-{d.day:02d}T"
    return f"{head}{_TWO_DIGITS[d.hour]}:{_TWO_DIGITS[d.minute]}:{_TWO_DIGITS[d.second]}Z"


def http_date(stamp: float) -> str:
    """``rfc1123_date(stamp)``, remembered per timestamp."""
    found = _http_dates.get(stamp)
    if found is None:
        if len(_http_dates) >= HTTP_DATES_KEPT:
            _http_dates.clear()
        found = _http_dates[stamp] = rfc1123_date(stamp)
    return found


def http_date_now() -> str:
    """``util.get_rfc1123_time()`` (the Date header), formatted once per second."""
    global _date_now
    second = int(time.time())
    now = _date_now
    if now[0] != second:
        now = _date_now = (second, rfc1123_date(second))
    return now[1]


def parse_ranges(header: str, size: int) -> list[Range] | None:
    """The satisfiable ranges of a ``Range: bytes=…`` header, in request order.

    None means "ignore the header" (not a bytes range, or syntactically invalid); an empty list
    means nothing is satisfiable (416).
    """
    unit, _, specs = header.partition("=")
    if unit.strip().lower() != "bytes" or not specs.strip():
        return None
    ranges: list[Range] = []
    for raw in specs.split(","):
        spec = raw.strip()
        if not spec:
            continue
        first, dash, last = spec.partition("-")
        first, last = first.strip(), last.strip()
        if not dash or not (first.isdigit() or (first == "" and last.isdigit())):
            return None
        if last and not last.isdigit():
            return None
        if first == "":
            suffix = int(last)
            if suffix > 0 and size > 0:
                ranges.append((max(0, size - suffix), size - 1))
            continue
        start = int(first)
        if last and int(last) < start:
            return None
        if start < size:
            ranges.append((start, min(int(last), size - 1) if last else size - 1))
    return _limit(ranges)


def _limit(ranges: list[Range]) -> list[Range] | None:
    if len(ranges) <= 1:
        return ranges
    ordered = sorted(ranges)
    overlapping = any(b[0] <= a[1] + 1 for a, b in itertools.pairwise(ordered))
    if len(ranges) <= MAX_RANGES and not overlapping:
        return ranges
    merged: list[Range] = []
    for start, end in ordered:
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged if len(merged) <= MAX_RANGES else None


def _if_range_holds(environ: dict[str, Any], res: FileResource) -> bool:
    """RFC 9110 §13.1.5: serve the range only if the validator still matches."""
    value = environ.get("HTTP_IF_RANGE")
    if value is None:
        return True
    value = value.strip()
    if value.startswith('"'):
        return bool(value.strip('"') == res.get_etag())
    stamp = util.parse_time_string(value)
    return stamp is not None and int(res.get_last_modified()) == stamp


def _etag_listed(header: str, etag: str) -> bool:
    return any(tag in (etag, "*") for tag in util.parse_if_match_header(header))


def check_conditionals(server: Any, environ: dict[str, Any], res: FileResource) -> None:
    """RFC 9110 §13.2.2 for GET / HEAD of an existing file: 412 or 304 (``DAVError``)."""
    etag = res.get_etag()
    modified = int(res.get_last_modified())
    if_match = environ.get("HTTP_IF_MATCH")
    if if_match is not None:
        if not _etag_listed(if_match, etag):
            raise DAVError(HTTP_PRECONDITION_FAILED, "If-Match header condition failed")
    elif "HTTP_IF_UNMODIFIED_SINCE" in environ:
        date = util.parse_time_string(environ["HTTP_IF_UNMODIFIED_SINCE"])
        if date is not None and modified > date:
            raise DAVError(HTTP_PRECONDITION_FAILED, "If-Unmodified-Since condition failed")
    if_none_match = environ.get("HTTP_IF_NONE_MATCH")
    if if_none_match is not None:
        if _etag_listed(if_none_match, etag):
            raise DAVError(HTTP_NOT_MODIFIED)
    elif "HTTP_IF_MODIFIED_SINCE" in environ:
        date = util.parse_time_string(environ["HTTP_IF_MODIFIED_SINCE"])
        if date is not None and modified <= date:
            raise DAVError(HTTP_NOT_MODIFIED)
    if "HTTP_IF" in environ:
        _check_if_header(server, environ, res, etag)


def _check_if_header(server: Any, environ: dict[str, Any], res: FileResource, etag: str) -> None:
    """The WebDAV ``If`` header (RFC 4918 §10.4), as WsgiDAV evaluates it."""
    util.parse_if_header_dict(environ)
    ref_url = res.get_ref_url()
    manager = server._davProvider.lock_manager
    tokens = (
        [
            lock["token"]
            for lock in manager.get_indirect_url_lock_list(
                ref_url, principal=environ["wsgidav.user_name"]
            )
        ]
        if manager
        else []
    )
    if not util.test_if_header_dict(res, environ["wsgidav.conditions.if"], ref_url, tokens, etag):
        raise DAVError(HTTP_PRECONDITION_FAILED, "'If' header condition failed.")


def _stream(res: FileResource, ranges: list[Range], regions: bool = False) -> Iterator[bytes]:
    reader = res.get_content()
    try:
        for start, end in ranges:
            if hasattr(reader, "iter_range"):
                yield from reader.iter_range(start, end + 1, BLOCK, regions)
            else:
                reader.seek(start)
                yield reader.read(end + 1 - start)
    finally:
        reader.close()


def _multipart(res: FileResource, ranges: list[Range], boundary: str) -> Iterator[bytes]:
    for start, end, head in _part_heads(res, ranges, boundary):
        yield head
        yield from _stream(res, [(start, end)])
        yield b"\r\n"
    yield f"--{boundary}--\r\n".encode("ascii")


def _part_heads(
    res: FileResource, ranges: list[Range], boundary: str
) -> list[tuple[int, int, bytes]]:
    size = res.get_content_length()
    return [
        (
            start,
            end,
            (
                f"--{boundary}\r\nContent-Type: {res.get_content_type()}\r\n"
                f"Content-Range: bytes {start}-{end}/{size}\r\n\r\n"
            ).encode(),
        )
        for start, end in ranges
    ]


def send_file(
    server: Any, environ: dict[str, Any], start_response: Any, res: FileResource, *, head: bool
) -> Iterator[bytes]:
    """Answer GET / HEAD for ``res`` (a generator, as WsgiDAV's handlers are). The node row
    goes to ``environ[ENVIRON_NODE]`` for middleware (OC-Checksum and the like)."""
    environ[ENVIRON_NODE] = res.node
    check_conditionals(server, environ, res)
    size = res.get_content_length()
    content_type = res.get_content_type()
    headers = [
        ("Content-Type", content_type),
        ("Last-Modified", http_date(res.get_last_modified())),
        ("ETag", f'"{res.get_etag()}"'),
        ("Accept-Ranges", "bytes"),
        ("Date", http_date_now()),
        *download_headers(content_type, res.get_display_name()),
    ]
    ranges = None
    if "HTTP_RANGE" in environ and size > 0 and _if_range_holds(environ, res):
        ranges = parse_ranges(environ["HTTP_RANGE"], size)
        if ranges == []:
            raise DAVError(
                HTTP_RANGE_NOT_SATISFIABLE,
                add_headers=[("Content-Range", f"bytes */{size}")],
            )
    res.finalize_headers(environ, headers)
    regions = ENVIRON_SENDS_FILE_REGIONS in environ
    if not ranges:
        start_response("200 OK", [*headers, ("Content-Length", str(size))])
        if not head and size > 0:
            yield from _stream(res, [(0, size - 1)], regions)
        return
    if len(ranges) == 1:
        start, end = ranges[0]
        start_response(
            "206 Partial Content",
            [
                *headers,
                ("Content-Length", str(end + 1 - start)),
                ("Content-Range", f"bytes {start}-{end}/{size}"),
            ],
        )
        if not head:
            yield from _stream(res, ranges, regions)
        return
    boundary = secrets.token_hex(16)
    length = sum(len(h) + e + 1 - s + 2 for s, e, h in _part_heads(res, ranges, boundary))
    length += len(f"--{boundary}--\r\n")
    multipart = [(k, v) for k, v in headers if k != "Content-Type"]
    start_response(
        "206 Partial Content",
        [
            *multipart,
            ("Content-Type", f"multipart/byteranges; boundary={boundary}"),
            ("Content-Length", str(length)),
        ],
    )
    if not head:
        yield from _multipart(res, ranges, boundary)

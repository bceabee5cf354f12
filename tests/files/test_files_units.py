"""Pure pieces of the files provider: Range parsing, HTTP dates, lock-root arithmetic."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import formatdate

import pytest
from wsgidav import util

from oxidav.providers.files import get as files_get
from oxidav.providers.files.get import (
    HTTP_DATES_KEPT,
    MAX_RANGES,
    http_date,
    http_date_now,
    parse_ranges,
    rfc1123_date,
    rfc1123_of,
)
from oxidav.providers.files.locks import _ancestors


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("bytes=0-9", [(0, 9)]),
        ("bytes=5-", [(5, 99)]),
        ("bytes=-10", [(90, 99)]),
        ("bytes=-1000", [(0, 99)]),
        ("bytes=90-200", [(90, 99)]),
        ("bytes=0-0,50-59", [(0, 0), (50, 59)]),
        ("bytes=50-59, 0-0", [(50, 59), (0, 0)]),  # request order kept
        ("bytes=0-10,5-20", [(0, 20)]),  # overlapping ranges are merged
        ("bytes=100-", []),  # unsatisfiable: 416
        ("bytes=-0", []),
        ("bytes=9-5", None),  # invalid: ignored
        ("bytes=a-b", None),
        ("items=0-5", None),
        ("bytes=", None),
    ],
)
def test_parse_ranges(header, expected):
    assert parse_ranges(header, 100) == expected


def test_many_ranges_are_merged():
    header = "bytes=" + ",".join(f"{i * 2}-{i * 2}" for i in range(MAX_RANGES + 1))
    assert parse_ranges(header, 1000) is None  # too many: served whole
    adjacent = "bytes=" + ",".join(f"{i}-{i}" for i in range(MAX_RANGES + 1))
    assert parse_ranges(adjacent, 1000) == [(0, MAX_RANGES)]


def test_lock_root_ancestors():
    assert _ancestors("/a/b") == ["/a/b", "/a", "/"]
    assert _ancestors("/") == ["/"]


@pytest.mark.parametrize(
    "stamp",
    [0.0, 1.0, 59.999999, 784111777.0, 1_700_000_000.25, 1_700_000_000.9999996, 4_102_444_800.5],
)
def test_http_date_equals_wsgidav(stamp: float) -> None:
    assert http_date(stamp) == util.get_rfc1123_time(stamp)
    assert http_date(stamp) == util.get_rfc1123_time(stamp)  # remembered: the same text


@pytest.mark.parametrize(
    "stamp",
    [-1.5, 0.0, 59.999999, 951782400.0, 1_700_000_000.9999996, 4_102_444_800.5, 253402300799.0],
)
def test_rfc1123_date_equals_formatdate(stamp: float) -> None:
    assert rfc1123_date(stamp) == formatdate(stamp, usegmt=True)


def test_rfc1123_dates_of_a_year_equal_formatdate() -> None:
    for hour in range(0, 366 * 24, 7):  # every weekday, month and hour of a leap year
        stamp = 1_704_067_200 + hour * 3600 + hour % 60 + 0.5
        assert rfc1123_date(stamp) == formatdate(stamp, usegmt=True)


def test_a_datetime_is_formatted_as_its_timestamp() -> None:
    """A PROPFIND's getlastmodified (``rfc1123_of(mtime)``) is the GET's Last-Modified
    (``http_date(mtime.timestamp())``), the last microsecond of a second included."""
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for step in range(0, 366 * 24 * 3600, 3 * 3600 + 7):
        for micro in (0, 1, 500_000, 999_999):
            when = start + timedelta(seconds=step, microseconds=micro)
            assert rfc1123_of(when) == rfc1123_date(when.timestamp())


def test_the_days_kept_for_dates_are_bounded() -> None:
    """``rfc1123_of`` remembers the text of at most ``HTTP_DATES_KEPT`` days, however many
    different days its datetimes fall on, and formats each the same as before."""
    start = datetime(1990, 1, 1, 23, 59, 59, 999_999, tzinfo=UTC)
    for day in range(HTTP_DATES_KEPT + 10):
        when = start + timedelta(days=day)
        assert rfc1123_of(when) == formatdate(when.timestamp(), usegmt=True)
        assert len(files_get._day_heads) <= HTTP_DATES_KEPT


def test_http_dates_kept_are_bounded() -> None:
    for i in range(HTTP_DATES_KEPT + 10):
        assert http_date(1_000_000.0 + i) == util.get_rfc1123_time(1_000_000.0 + i)
    assert len(files_get._http_dates) <= HTTP_DATES_KEPT


def test_http_date_now_is_the_current_second() -> None:
    before = int(time.time())
    now = util.parse_time_string(http_date_now())
    after = int(time.time())
    assert now is not None and before <= now <= after
    seconds = range(before, int(time.time()) + 1)
    assert http_date_now() in {util.get_rfc1123_time(second) for second in seconds}

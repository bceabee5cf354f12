"""Pure pieces of the files provider: Range parsing, lock-root arithmetic."""

from __future__ import annotations

import pytest

from oxidav.providers.files_get import MAX_RANGES, parse_ranges
from oxidav.providers.files_locks import _ancestors


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

"""Names and paths: NFC normalization, validation, materialized-path helpers."""

from __future__ import annotations

import unicodedata

import pytest

from oxidav.tree.errors import InvalidName
from oxidav.tree.names import (
    ancestor_paths,
    is_same_or_below,
    normalize_name,
    normalize_path,
    parent_path,
    subtree_bounds,
)


def test_names_are_nfc_normalized():
    nfd = unicodedata.normalize("NFD", "Ünïcødé é")
    assert nfd != "Ünïcødé é"
    assert normalize_name(nfd) == "Ünïcødé é"


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\x00b", "x" * 256])
def test_invalid_names_are_refused(bad):
    with pytest.raises(InvalidName):
        normalize_name(bad)


@pytest.mark.parametrize("ok", ["a b", "#", "?", "+", "&", "%20", "...", ".hidden", "x" * 255])
def test_unusual_but_valid_names(ok):
    assert normalize_name(ok) == ok


def test_paths():
    assert normalize_path("/") == ""
    assert normalize_path("/a//b/") == "/a/b"
    with pytest.raises(InvalidName):
        normalize_path("/a/../b")
    assert parent_path("/a/b") == "/a"
    assert parent_path("/a") == ""
    assert ancestor_paths("") == [""]
    assert ancestor_paths("/a/b") == ["", "/a", "/a/b"]
    assert is_same_or_below("/a", "/a/b")
    assert is_same_or_below("/a", "/a")
    assert not is_same_or_below("/a", "/ab")


def test_subtree_bounds_select_exactly_the_descendants():
    lo, hi = subtree_bounds("/a")
    inside = ["/a/b", "/a/", "/a/\U0001f600", "/a/b/c"]
    outside = ["/a", "/ab", "/a b", "/a.b", "/a0", "/b", "/"]
    assert all(lo <= p < hi for p in inside)
    assert not any(lo <= p < hi for p in outside)
    lo, hi = subtree_bounds("")
    assert all(lo <= p < hi for p in ["/a", "/\U0001f600/x"])


def test_normalize_path_is_memoized_but_still_refuses_every_time(monkeypatch):
    from oxidav.tree import names

    monkeypatch.setattr(names, "_path_memo", {})
    nfd = "/" + unicodedata.normalize("NFD", "Ünï") + "//x/"
    assert normalize_path(nfd) == normalize_path(nfd) == "/Ünï/x"
    assert names._path_memo[nfd] == "/Ünï/x"
    for _ in range(2):
        with pytest.raises(InvalidName):
            normalize_path("/a/../b")
    assert "/a/../b" not in names._path_memo


def test_normalize_path_memo_is_bounded(monkeypatch):
    from oxidav.tree import names

    monkeypatch.setattr(names, "_path_memo", {})
    monkeypatch.setattr(names, "PATH_MEMO_ENTRIES", 8)
    for i in range(20):
        assert normalize_path(f"/d/{i}") == f"/d/{i}"
        assert len(names._path_memo) <= 8
    long = "/" + "/".join(["x" * 200] * 6)
    assert normalize_path(long) == long
    assert long not in names._path_memo

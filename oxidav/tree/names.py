"""Names and paths of the tree: NFC normalization, validation and materialized-path helpers.

A *path* here is relative to a user's root: ``""`` is the root, ``"/a/b"`` a node below it.
Every segment is NFC-normalized (what macOS sends as NFD and Linux as NFC names the same node)
and validated, so ``..`` or an encoded ``/`` can never leave the user's root.
"""

from __future__ import annotations

import unicodedata

from oxidav.tree.errors import InvalidName

MAX_NAME_CHARS = 255
#: ``normalize_path`` remembers this many answers (every request normalizes its path twice:
#: authorization and the provider); the memo is emptied when full.
PATH_MEMO_ENTRIES = 4096
#: Longer paths are normalized every time (they would make the memo's memory unbounded).
PATH_MEMO_MAX_CHARS = 1024
_path_memo: dict[str, str] = {}


def normalize_name(name: str) -> str:
    """Return the NFC form of one path segment, or raise ``InvalidName``."""
    name = unicodedata.normalize("NFC", name)
    if name in ("", ".", ".."):
        raise InvalidName(f"invalid name {name!r}")
    if "/" in name or "\x00" in name:
        raise InvalidName(f"invalid character in name {name!r}")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidName(f"name longer than {MAX_NAME_CHARS} characters")
    return name


def split_path(path: str) -> list[str]:
    """``"/a/b/"`` -> ``["a", "b"]``; each segment normalized; empty segments ignored."""
    return [normalize_name(part) for part in path.split("/") if part != ""]


def join_path(parts: list[str]) -> str:
    """``["a", "b"]`` -> ``"/a/b"``; ``[]`` -> ``""`` (the root)."""
    return "".join("/" + part for part in parts)


def normalize_path(path: str) -> str:
    """Any client path -> the materialized form (``""`` or ``"/a/b"``), validated.

    Memoized (a pure function): only valid paths are remembered, an invalid one raises
    ``InvalidName`` every time."""
    found = _path_memo.get(path)
    if found is not None:
        return found
    normalized = join_path(split_path(path))
    if len(path) <= PATH_MEMO_MAX_CHARS:
        if len(_path_memo) >= PATH_MEMO_ENTRIES:
            _path_memo.clear()
        _path_memo[path] = normalized
    return normalized


def parent_path(path: str) -> str:
    """``"/a/b"`` -> ``"/a"``; ``"/a"`` -> ``""``. The root has no parent."""
    if path == "":
        raise InvalidName("the root has no parent")
    return path.rsplit("/", 1)[0]


def base_name(path: str) -> str:
    """``"/a/b"`` -> ``"b"``."""
    return path.rsplit("/", 1)[1]


def ancestor_paths(path: str) -> list[str]:
    """The path and every folder above it, root first: ``"/a/b"`` -> ``["", "/a", "/a/b"]``."""
    result = [""]
    if path:
        parts = path[1:].split("/")
        result.extend(join_path(parts[: i + 1]) for i in range(len(parts)))
    return result


def subtree_bounds(path: str) -> tuple[str, str]:
    """Bounds ``(lo, hi)`` with ``lo <= p < hi`` exactly for the strict descendants of ``path``.

    ``'0'`` is the character after ``'/'``, and paths compare byte-wise.
    """
    return path + "/", path + "0"


def is_same_or_below(path: str, other: str) -> bool:
    """Whether ``other`` is ``path`` or one of its descendants."""
    return other == path or other.startswith(path + "/")

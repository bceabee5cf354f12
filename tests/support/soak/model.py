"""The soak's model of one client's namespace: what acknowledged operations left there.

A namespace maps a relative path (``"f1"``, ``"d0"``, ``"d0/g2"``) to an ``Entry``: a folder
or a file with the SHA-256 of its content, and the value of the soak's dead property, if set.
Operations are pure functions from one namespace to the next, so an operation whose answer was
lost to a kill allows exactly two namespaces: the one before it and the one after it.
"""

from __future__ import annotations

from dataclasses import dataclass

Namespace = dict[str, "Entry"]


@dataclass(frozen=True)
class Entry:
    folder: bool
    sha: str | None = None  # files: SHA-256 hex of the content
    prop: str | None = None  # the soak's dead property


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root + "/")


def remove(ns: Namespace, root: str) -> Namespace:
    return {p: e for p, e in ns.items() if not _under(p, root)}


def put(ns: Namespace, path: str, sha: str) -> Namespace:
    """PUT (or a chunked upload's MOVE .file): an overwrite keeps the node and its properties."""
    old = ns.get(path)
    return {**ns, path: Entry(False, sha, old.prop if old else None)}


def move(ns: Namespace, src: str, dst: str) -> Namespace:
    """MOVE with Overwrite: T — the destination's subtree is replaced by the source's."""
    out = remove(ns, dst)
    moved = {dst + p[len(src) :]: e for p, e in ns.items() if _under(p, src)}
    return {**remove(out, src), **moved}


def mkcol(ns: Namespace, path: str) -> Namespace:
    return {**ns, path: Entry(True)}


def proppatch(ns: Namespace, path: str, value: str) -> Namespace:
    old = ns[path]
    return {**ns, path: Entry(old.folder, old.sha, value)}

"""What can be granted: folders, files, calendars and address books, named by (kind, id).

Grants reference a resource by its kind and integer id only (no foreign key into another
room's tables). The engine needs a little more about a resource to decide: who owns it, and for
tree nodes, where it sits (its parent id and materialized path, docs/architecture.md#nodes), which
is how a grant on a folder reaches everything below it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol


class ResourceKind(Enum):
    FOLDER = "folder"
    FILE = "file"
    CALENDAR = "calendar"
    ADDRESSBOOK = "addressbook"

    @property
    def is_node(self) -> bool:
        """Folders and files are nodes of the file tree (one id space, with ancestors)."""
        return self in (ResourceKind.FOLDER, ResourceKind.FILE)


class NodeLike(Protocol):
    """The fields of a tree node the engine reads (``oxidav.tree.NodeInfo`` has them)."""

    @property
    def id(self) -> int: ...

    @property
    def user_id(self) -> int: ...

    @property
    def parent_id(self) -> int | None: ...

    @property
    def path(self) -> str: ...

    @property
    def is_folder(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Resource:
    """One thing a principal wants to act on.

    For nodes, ``path`` is the materialized path below the owner's root (``""`` for the root,
    ``"/a/b"`` below it) and ``parent_id`` the id of the folder at the parent path (None for the
    root). Calendars and address books have neither.
    """

    kind: ResourceKind
    id: int
    owner_id: int
    parent_id: int | None = None
    path: str = ""

    @classmethod
    def node(cls, node: NodeLike) -> Resource:
        """The resource of a tree node (a ``NodeInfo`` or anything shaped like it)."""
        kind = ResourceKind.FOLDER if node.is_folder else ResourceKind.FILE
        return cls(kind, node.id, node.user_id, node.parent_id, node.path)

    @classmethod
    def calendar(cls, calendar_id: int, owner_id: int) -> Resource:
        return cls(ResourceKind.CALENDAR, calendar_id, owner_id)

    @classmethod
    def addressbook(cls, addressbook_id: int, owner_id: int) -> Resource:
        return cls(ResourceKind.ADDRESSBOOK, addressbook_id, owner_id)

    @property
    def parent_path(self) -> str | None:
        """The materialized path of a node's folder (None for the root and non-nodes)."""
        if not self.kind.is_node or self.parent_id is None:
            return None
        return self.path.rsplit("/", 1)[0]

    def describe(self) -> str:
        """A short stable label for audit lines: ``file:42(owner=3 path='/a/b')``."""
        where = f" path={self.path!r}" if self.kind.is_node else ""
        return f"{self.kind.value}:{self.id}(owner={self.owner_id}{where})"


def ancestor_paths(path: str) -> list[str]:
    """The path and every folder above it, root first: ``"/a/b"`` -> ``["", "/a", "/a/b"]``."""
    parts = path.split("/")[1:] if path else []
    return ["", *("/" + "/".join(parts[: i + 1]) for i in range(len(parts)))]

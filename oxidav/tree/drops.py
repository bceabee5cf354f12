"""Where a file put through a file drop lands: under a free name, never over anything.

A file drop (an upload-only public link) must not tell what its folder holds, so a put never
overwrites and never fails because of what is there. ``place_drop`` runs in the write's own
transaction, under the user's tree write lock (``lock_tree``), so two drops of one name at
once land under two names. For a drop of ``a/b/name.ext`` below the link's folder (as
Nextcloud's ``FilesDropPlugin`` places it):

- each folder on the way is entered when it exists and made when it is missing; where a *file*
  holds a folder's name ``b``, the first folder named ``b (N)`` is entered, or a new one made;
- the file takes the first free name of ``name.ext``, ``name (2).ext``, ``name (3).ext``, …
  (Nextcloud's ``getNonExistingName``), found in one query over the folder's children whose
  names start with ``name``. A name that would grow past ``MAX_NAME_CHARS`` is shortened.

A drop is at most ``MAX_DROP_DEPTH`` names deep (400 beyond: a rule on the request alone).
"""

from __future__ import annotations

import re

from sqlalchemy import select

from oxidav.db import Transaction, core
from oxidav.db.models.tree import Node
from oxidav.tree.errors import InvalidName, NotFound
from oxidav.tree.names import MAX_NAME_CHARS, join_path, split_path
from oxidav.tree.nodes import child, lock_tree, resolve
from oxidav.tree.types import NodeInfo
from oxidav.tree.writes import insert_folder

_COUNTED = re.compile(r" \((\d+)\)$")
#: A drop names at most this many segments below its folder (each folder on the way may be
#: looked up and made: the work of one request stays bounded).
MAX_DROP_DEPTH = 64
#: Room a numbered name needs beside its stem: `` (N)`` with N of up to 12 digits.
_NUMBER_ROOM = 15


def _split_extension(name: str) -> tuple[str, str]:
    """``"a.tar.gz"`` -> ``("a.tar", ".gz")``; a leading dot is not an extension, nor a
    tail too long to leave room for a stem."""
    dot = name.rfind(".")
    if dot <= 0 or len(name) - dot > MAX_NAME_CHARS // 2:
        return name, ""
    return name[:dot], name[dot:]


def _numbered(stem: str, number: int, extension: str) -> str:
    suffix = f" ({number}){extension}"
    return stem[: MAX_NAME_CHARS - len(suffix)] + suffix


def _names_like(session: Transaction, parent_id: int, prefix: str) -> dict[str, bool]:
    """The live children of ``parent_id`` whose names start with ``prefix``: name -> folder."""
    query = select(Node.name, Node.is_folder).where(
        Node.parent_id == parent_id,
        Node.trashed_at.is_(None),
        Node.name.startswith(prefix, autoescape=True),
    )
    return {name: bool(is_folder) for name, is_folder in core(session).execute(query)}


def free_name(session: Transaction, parent_id: int, name: str, *, split: bool = True) -> str:
    """``name`` if no live child of ``parent_id`` has it, else the first free ``name (N)``
    (N from 2; before the extension when ``split``)."""
    stem, extension = _split_extension(name) if split else (name, "")
    # Numbered names shorten the stem to fit: every candidate starts with this prefix.
    taken = _names_like(session, parent_id, stem[: MAX_NAME_CHARS - len(extension) - _NUMBER_ROOM])
    if name not in taken:
        return name
    number = 2
    while _numbered(stem, number, extension) in taken:
        number += 1
    return _numbered(stem, number, extension)


def _new_folder(session: Transaction, user_id: int, parent: NodeInfo, name: str) -> NodeInfo:
    # No roll-up here: the file written next in this transaction rolls up every folder above
    # it, the new ones included (one statement, whatever the depth).
    return insert_folder(session, user_id, parent, name)


def _folder_for(session: Transaction, user_id: int, parent: NodeInfo, name: str) -> NodeInfo:
    """The folder a drop enters for the segment ``name`` below ``parent`` (made if needed)."""
    found = child(session, parent.id, name)
    if found is None:
        return _new_folder(session, user_id, parent, name)
    if found.is_folder:
        return found
    numbered = sorted(
        (int(match.group(1)), candidate)
        for candidate, is_folder in _names_like(session, parent.id, name + " (").items()
        if is_folder
        and (match := _COUNTED.search(candidate)) is not None
        and candidate[: match.start()] == name
    )
    if numbered:
        entered = child(session, parent.id, numbered[0][1])
        assert entered is not None
        return entered
    return _new_folder(session, user_id, parent, free_name(session, parent.id, name, split=False))


def place_drop(session: Transaction, user_id: int, root: str, below: str) -> str:
    """The tree path a file dropped at ``below`` (relative to the drop folder ``root``, e.g.
    ``"/a/b/name.ext"``) is written to, making the folders on the way. Takes the tree lock;
    the caller writes the file in the same transaction (its roll-up covers the folders made
    here). ``NotFound`` when ``root`` is not a live folder or ``below`` names no file;
    ``InvalidName`` when ``below`` is deeper than ``MAX_DROP_DEPTH``."""
    lock_tree(session, user_id)
    folder = resolve(session, user_id, root)
    if folder is None or not folder.is_folder:
        raise NotFound(f"{root!r} is not a folder")
    parts = split_path(below)
    if not parts:
        raise NotFound("a drop needs a file name")
    if len(parts) > MAX_DROP_DEPTH:
        raise InvalidName(f"a drop is at most {MAX_DROP_DEPTH} names deep")
    for segment in parts[:-1]:
        folder = _folder_for(session, user_id, folder, segment)
    return join_path([*split_path(folder.path), free_name(session, folder.id, parts[-1])])

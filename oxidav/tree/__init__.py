"""The file tree as data: nodes, create / move / copy / delete / trash, etag roll-up, quotas,
dead properties and locks — no HTTP, no WsgiDAV (docs/architecture.md#rooms, #nodes).

Every operation takes the caller's SQLAlchemy session, so one request is one transaction;
paths are relative to the user's root in the materialized form of ``names.normalize_path``
(``""`` is the root, ``"/a/b"`` below it).

- ``names``: NFC normalization, validation, path helpers.
- ``nodes``: resolve by path / id, the per-user tree lock, the etag/size roll-up.
- ``listing``: a folder page (keyset), a subtree walk.
- ``writes``: MKCOL, writing a file version (manifest incref / decref).
- ``moves``: MOVE (path-prefix rewrite), COPY (shared manifests).
- ``trash``: DELETE to the trash, restore, purge, releasing a removed user's content.
- ``quota``: limits and used bytes.
- ``props``: dead properties by node id; ``locks``: lock rows.
"""

from oxidav.tree.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    InvalidName,
    IsAFolder,
    NotFound,
    PreconditionFailed,
    QuotaExceeded,
    TreeError,
)
from oxidav.tree.listing import (
    ListedRow,
    count_subtree,
    list_children,
    list_subtree,
    read_children,
    read_children_brief,
    read_listed_rows,
)
from oxidav.tree.moves import TransferResult, copy_node, move_node
from oxidav.tree.names import normalize_name, normalize_path
from oxidav.tree.nodes import ensure_root, get_node, lock_tree, resolve
from oxidav.tree.quota import available_bytes, quota_limit, used_bytes
from oxidav.tree.trash import (
    purge,
    purge_trashed_before,
    release_user_content,
    restore,
    trash_node,
)
from oxidav.tree.types import ContentFacts, ContentRefs, NodeInfo
from oxidav.tree.writes import (
    WriteContext,
    WriteResult,
    make_folder,
    read_write_context,
    set_mtime,
    write_file,
)

__all__ = [
    "AlreadyExists",
    "Conflict",
    "ContentFacts",
    "ContentRefs",
    "Forbidden",
    "InvalidName",
    "IsAFolder",
    "ListedRow",
    "NodeInfo",
    "NotFound",
    "PreconditionFailed",
    "QuotaExceeded",
    "TransferResult",
    "TreeError",
    "WriteContext",
    "WriteResult",
    "available_bytes",
    "copy_node",
    "count_subtree",
    "ensure_root",
    "get_node",
    "list_children",
    "list_subtree",
    "lock_tree",
    "make_folder",
    "move_node",
    "normalize_name",
    "normalize_path",
    "purge",
    "purge_trashed_before",
    "quota_limit",
    "read_children",
    "read_children_brief",
    "read_listed_rows",
    "read_write_context",
    "release_user_content",
    "resolve",
    "restore",
    "set_mtime",
    "trash_node",
    "used_bytes",
    "write_file",
]

"""Tree views: a request path served from a subtree of another user's file tree.

When a request reaches a folder or file that is not in the caller's own tree — a share mounted
in the recipient's tree (``/remote.php/dav/files/bob/Photos/…`` served from alice's
``/Photos``), or a public link (``/public.php/webdav/…`` served from the link's folder) — the
authz layer decides it and leaves one ``TreeView`` per mapped URL prefix in
``environ[ENVIRON_VIEWS]``. The files provider maps every path below ``url_root`` into
``owner``'s tree at ``tree_root``; hrefs stay in the URL space the client asked in. A view
marked ``drop`` places every PUT under a free name (an upload-only link, ``link_access``).

This module only carries the decision; the decision itself is made in ``oxidav.authz``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oxidav.environ import ENVIRON_VIEWS


@dataclass(frozen=True, slots=True)
class TreeView:
    """URL paths at or below ``url_root`` map to ``owner``'s tree at ``tree_root``.

    ``url_root``: a decoded absolute URL path without trailing slash
    (``/remote.php/dav/files/bob/Photos``). ``tree_root``: a normalized tree path of the owner
    (``""`` for the owner's root, else ``"/a/b"``).
    """

    owner: str
    owner_id: int
    url_root: str
    tree_root: str
    #: A file drop (an upload-only link): a PUT lands under a free name (``oxidav.tree.drops``)
    #: and never overwrites, whatever the folder holds.
    drop: bool = False

    def tree_path(self, url_path: str) -> str | None:
        """The owner's tree path for a decoded URL path, or None if it is not below the view."""
        if url_path == self.url_root or url_path == self.url_root + "/":
            return self.tree_root
        if url_path.startswith(self.url_root + "/"):
            rest = url_path[len(self.url_root) :].rstrip("/")
            return self.tree_root + rest
        return None


def views_of(environ: dict[str, Any]) -> Sequence[TreeView]:
    """The views the authz layer admitted for this request (none for own-tree requests)."""
    views: Sequence[TreeView] = environ.get(ENVIRON_VIEWS) or ()
    return views


def view_for(environ: dict[str, Any], url_path: str) -> tuple[TreeView, str] | None:
    """The view serving ``url_path`` and the owner's tree path there, if any."""
    for view in views_of(environ):
        tree_path = view.tree_path(url_path)
        if tree_path is not None:
            return view, tree_path
    return None

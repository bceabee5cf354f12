"""A folder's children as a listing reads them, without their WsgiDAV resources.

``keyset_pages`` reads a folder's children a page at a time, in name order. A ``MemberRow`` is
a child's ``NodeInfo`` and href, for a PROPFIND answered from the rows; it builds the child's
resource (``FolderResource.member``) only for a question its row cannot answer. A
``ListedMember`` is a child's ``ListedRow`` and href, for a PROPFIND of only what a file
browser's columns show; it has no resource at all. Both are made by ``FolderResource``
(``iter_member_rows``, ``iter_listed_members``), which gives them their hrefs and rolled-up
etags.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from oxidav.providers.files.props import Page
from oxidav.tree import ListedRow
from oxidav.tree.types import NodeInfo

if TYPE_CHECKING:
    from oxidav.providers.files.resources import FileResource, FolderResource

#: A child row as a listing reads it: a whole node, or what a file browser's columns show.
ChildT = TypeVar("ChildT", NodeInfo, ListedRow)


def keyset_pages(read: Callable[[str | None], list[ChildT]], size: int) -> Iterator[list[ChildT]]:
    """``read(after)``'s pages of at most ``size`` children, each after the last name of the one
    before (the first after None), until one comes back short; no empty page."""
    after: str | None = None
    while True:
        children = read(after)
        if children:
            yield children
        if len(children) < size:
            return
        after = children[-1].name


class ListedMember:
    """A listed child as its ``ListedRow`` and href, for an answer that shows nothing else (a
    named PROPFIND of ``propfind.LISTED_PROPERTIES``): what those properties' formatters ask of
    a resource. It has no resource: nothing else can be answered from it."""

    __slots__ = ("_href", "is_collection", "node")

    def __init__(self, node: ListedRow, href: str) -> None:
        self.node = node
        self.is_collection = node.is_folder
        self._href = href

    def get_href(self) -> str:
        return self._href

    def get_display_name(self) -> str:
        """Its name: only a user's root has none, and a root is nobody's child."""
        return self.node.name


class MemberRow:
    """A listed child as its row and href, for an answer written from the rows (a named
    PROPFIND whose properties all come from them, an allprop one): what the row formatters ask
    of a resource, without building one. Its resource (provider, locks, dead properties) is
    built on the first question the row cannot answer (``resource``)."""

    __slots__ = ("_folder", "_href", "_page", "_resource", "is_collection", "node")

    def __init__(self, node: NodeInfo, href: str, folder: FolderResource, page: Page) -> None:
        self.node = node
        self.is_collection = node.is_folder
        self._href = href
        self._folder = folder
        self._page = page
        self._resource: FileResource | FolderResource | None = None

    @property
    def provider(self) -> Any:
        return self._folder.provider

    def get_href(self) -> str:
        return self._href

    def get_display_name(self) -> str:  # as its resource's
        return self.node.name or self._folder.target.username

    @property
    def page(self) -> Page:
        """The ``Page`` it was listed in."""
        return self._page

    def has_locks(self) -> bool:
        """As its resource's, without building it when its page holds no lock."""
        if self._page.holds_no_locks(self._folder.provider.lock_manager):
            return False
        return self.resource().has_locks()

    def resource(self) -> FileResource | FolderResource:
        """The member's resource, listed in the same ``Page`` as its siblings."""
        if self._resource is None:
            self._resource = self._folder.member(self.node, self._href, self._page)
        return self._resource

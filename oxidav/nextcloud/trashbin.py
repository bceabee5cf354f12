"""The trashbin provider: ``/remote.php/dav/trashbin/<user>/{trash,restore}/``.

PROPFIND of ``trash/`` lists the user's deleted items (one per DELETE) as
``<name>.d<id>`` with ``nc:trashbin-filename``, ``nc:trashbin-original-location`` and
``nc:trashbin-deletion-time`` (Nextcloud apps/files_trashbin/lib/Sabre); ``MOVE`` of an item
to ``…/restore/<anything>`` restores it to its original place (412 if something lives there
now); ``DELETE`` of an item purges it, of ``trash/`` the whole trash. Other users' trash does
not exist (404).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from wsgidav import util
from wsgidav.dav_error import (
    HTTP_BAD_REQUEST,
    HTTP_CREATED,
    HTTP_FORBIDDEN,
    HTTP_NOT_FOUND,
    DAVError,
)
from wsgidav.dav_provider import DAVCollection, DAVNonCollection, DAVProvider

from oxidav.authz.authn.principal import Principal
from oxidav.environ import ENVIRON_PRINCIPAL, principal_of
from oxidav.nextcloud.context import NextcloudContext
from oxidav.nextcloud.enrichers import OC_FILEID, OC_ID, oc_id
from oxidav.nextcloud.trash_ops import TrashItem, list_items, restore
from oxidav.tree import TreeError, lock_tree, purge
from oxidav.urls import TRASHBIN

NC = "{http://nextcloud.org/ns}"
FILENAME = NC + "trashbin-filename"
ORIGINAL_LOCATION = NC + "trashbin-original-location"
DELETION_TIME = NC + "trashbin-deletion-time"
ITEM_PROPS = (FILENAME, ORIGINAL_LOCATION, DELETION_TIME, OC_ID, OC_FILEID)


def item_name(item: TrashItem) -> str:
    """The URL segment of an item: its name and, after ``.d``, its id (unique)."""
    return f"{item.name}.d{item.id}"


def item_id(segment: str) -> int | None:
    head, sep, tail = segment.rpartition(".d")
    return int(tail) if sep and head and tail.isdigit() else None


class _Folder(DAVCollection):  # type: ignore[misc]
    """A fixed collection (the provider root, ``<user>/``, ``restore/``)."""

    def __init__(self, path: str, environ: dict[str, Any], members: list[str]) -> None:
        super().__init__(path, environ)
        self.members = members

    def get_member_names(self) -> list[str]:
        return self.members


class TrashFolder(DAVCollection):  # type: ignore[misc]
    """``<user>/trash/``: the deleted items."""

    def __init__(self, path: str, environ: dict[str, Any], principal: Principal) -> None:
        super().__init__(path, environ)
        self.principal = principal
        self.context: NextcloudContext = self.provider.context

    def _items(self) -> list[TrashItem]:
        with self.context.db.read() as session:
            return list_items(session, self.principal.user_id)

    def get_member_names(self) -> list[str]:
        return [item_name(item) for item in self._items()]

    def get_member_list(self) -> list[Any]:
        base = self.path.rstrip("/")
        return [make_item(f"{base}/{item_name(i)}", self.environ, i) for i in self._items()]

    def support_recursive_delete(self) -> bool:
        return True

    def handle_delete(self) -> bool:
        """Empty the trash: purge every item, in one transaction."""
        context = self.context
        with context.db.write() as session:
            lock_tree(session, self.principal.user_id)
            for item in list_items(session, self.principal.user_id):
                purge(session, context.chain, item.id)
        return True


class _ItemMixin:
    item: TrashItem
    provider: Any
    environ: dict[str, Any]

    def get_display_name(self) -> str:
        return self.item.name

    def get_last_modified(self) -> float:
        return self.item.mtime.timestamp()

    def get_property_names(self, *, is_allprop: bool) -> list[str]:
        names: list[str] = super().get_property_names(is_allprop=is_allprop)  # type: ignore[misc]
        return [*names, *ITEM_PROPS]

    def get_property_value(self, name: str) -> Any:
        item = self.item
        if name == FILENAME:
            return item.name
        if name == ORIGINAL_LOCATION:
            return item.original_path.lstrip("/")
        if name == DELETION_TIME:
            return str(int(item.trashed_at.timestamp()))
        if name == OC_ID:
            return oc_id(item.id, self.provider.context.settings.instance_id)
        if name == OC_FILEID:
            return str(item.id)
        return super().get_property_value(name)  # type: ignore[misc]

    def support_recursive_delete(self) -> bool:
        return True

    def handle_delete(self) -> bool:
        """Purge this item for good (its content references are dropped)."""
        context: NextcloudContext = self.provider.context
        principal: Principal = self.environ[ENVIRON_PRINCIPAL]
        with context.db.write() as session:
            lock_tree(session, principal.user_id)
            if not list_items(session, principal.user_id, self.item.id):
                raise DAVError(HTTP_NOT_FOUND)
            purge(session, context.chain, self.item.id)
        return True

    def delete(self) -> None:
        self.handle_delete()


class TrashedFolder(_ItemMixin, DAVCollection):  # type: ignore[misc]
    def __init__(self, path: str, environ: dict[str, Any], item: TrashItem) -> None:
        DAVCollection.__init__(self, path, environ)
        self.item = item

    def get_member_names(self) -> list[str]:
        return []  # the contents of a deleted folder are not browsable yet


class TrashedFile(_ItemMixin, DAVNonCollection):  # type: ignore[misc]
    def __init__(self, path: str, environ: dict[str, Any], item: TrashItem) -> None:
        DAVNonCollection.__init__(self, path, environ)
        self.item = item

    def get_content_length(self) -> int:
        return self.item.size

    def get_content_type(self) -> str:
        return self.item.mime_type

    def get_etag(self) -> str:
        return self.item.etag

    def support_etag(self) -> bool:
        return True

    def get_content(self) -> Any:
        raise DAVError(HTTP_FORBIDDEN, "restore the file to read it")


def make_item(path: str, environ: dict[str, Any], item: TrashItem) -> Any:
    cls = TrashedFolder if item.is_folder else TrashedFile
    return cls(path, environ, item)


class TrashbinProvider(DAVProvider):  # type: ignore[misc]
    def __init__(self, context: NextcloudContext) -> None:
        super().__init__()
        self.context = context

    def get_resource_inst(self, path: str, environ: dict[str, Any]) -> Any:
        parts = [part for part in path.split("/") if part]
        if not parts:
            return _Folder("/", environ, [])
        principal = principal_of(environ)
        if not isinstance(principal, Principal) or parts[0] != principal.username:
            return None
        user = parts[0]
        if len(parts) == 1:
            return _Folder(f"/{user}/", environ, ["trash", "restore"])
        if parts[1] == "restore" and len(parts) == 2:
            return _Folder(f"/{user}/restore/", environ, [])
        if parts[1] != "trash":
            return None
        if len(parts) == 2:
            return TrashFolder(f"/{user}/trash/", environ, principal)
        wanted = item_id(parts[2])
        if len(parts) > 3 or wanted is None:
            return None
        with self.context.db.read() as session:
            found = list_items(session, principal.user_id, wanted)
        if not found or item_name(found[0]) != parts[2]:
            return None
        return make_item(path, environ, found[0])

    def custom_request_handler(
        self, environ: dict[str, Any], start_response: Any, default_handler: Any
    ) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        if method == "MOVE":
            return self._restore(environ, start_response)
        if method in ("COPY", "PUT", "MKCOL", "PROPPATCH"):
            raise DAVError(HTTP_FORBIDDEN, "the trashbin is read-only except MOVE and DELETE")
        result: Iterable[bytes] = default_handler(environ, start_response)
        return result

    def _restore(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        """MOVE ``trash/<item>`` to ``restore/<name>``: back to the original location."""
        item = self.get_resource_inst(environ["PATH_INFO"], environ)
        if not isinstance(item, _ItemMixin):
            raise DAVError(HTTP_NOT_FOUND)
        principal: Principal = environ[ENVIRON_PRINCIPAL]
        destination = unquote(urlsplit(environ.get("HTTP_DESTINATION", "")).path)
        restore_dir = f"{TRASHBIN}/{principal.username}/restore/"
        if not destination.startswith(restore_dir) or destination == restore_dir:
            raise DAVError(HTTP_BAD_REQUEST, "Destination must be below restore/")
        try:
            with self.context.db.write() as session:
                restore(
                    session,
                    principal.user_id,
                    item.item.id,
                    self.context.settings.default_quota_bytes,
                )
        except TreeError as exc:
            raise DAVError(exc.status, str(exc)) from None
        sent: Iterable[bytes] = util.send_status_response(environ, start_response, HTTP_CREATED)
        return sent

"""The URL layout of docs/architecture.md#urls in one place: every href oxidav builds comes from
here.

The paths are oxidav-absolute: what a request path looks like once the ``base_path`` prefix is
taken off (``oxidav.base_path``). An href sent to a client starts with the prefix: the builders
take it as ``mount`` (a provider's ``mount_path``, which is the prefix)."""

from __future__ import annotations

from urllib.parse import quote, unquote, urlsplit

from wsgidav.dav_error import HTTP_BAD_REQUEST, DAVError

DAV_ROOT = "/remote.php/dav"
LEGACY_WEBDAV = "/remote.php/webdav"
FILES = f"{DAV_ROOT}/files"
PRINCIPALS = f"{DAV_ROOT}/principals"
PRINCIPALS_USERS = f"{PRINCIPALS}/users"
CALENDARS = f"{DAV_ROOT}/calendars"
ADDRESSBOOKS = f"{DAV_ROOT}/addressbooks"
ADDRESSBOOKS_USERS = f"{ADDRESSBOOKS}/users"
UPLOADS = f"{DAV_ROOT}/uploads"
TRASHBIN = f"{DAV_ROOT}/trashbin"
#: Public links: WebDAV of a link's tree (Basic: token + link password) and the link pages.
PUBLIC_WEBDAV = "/public.php/webdav"
#: Public links, Nextcloud 29+: WebDAV with the token as first path segment.
PUBLIC_DAV_FILES = "/public.php/dav/files"
PUBLIC_SHARE = "/s"

#: Collections below which the next path segment names the owning user.
USER_SCOPED_PREFIXES = (FILES, CALENDARS, ADDRESSBOOKS_USERS, UPLOADS, TRASHBIN)


def _segment(name: str) -> str:
    return quote(name, safe="")


def principal_href(username: str, mount: str = "") -> str:
    return f"{mount}{PRINCIPALS_USERS}/{_segment(username)}/"


def files_home_href(username: str, mount: str = "") -> str:
    return f"{mount}{FILES}/{_segment(username)}/"


def calendar_home_href(username: str, mount: str = "") -> str:
    return f"{mount}{CALENDARS}/{_segment(username)}/"


def addressbook_home_href(username: str, mount: str = "") -> str:
    return f"{mount}{ADDRESSBOOKS_USERS}/{_segment(username)}/"


def owner_of_path(path: str) -> str | None:
    """The user a user-scoped path belongs to (``/remote.php/dav/files/alice/x`` -> alice).

    ``path`` is the decoded request path. None for paths that are not user-scoped (the DAV
    root, principals, the user-scoped collections themselves).
    """
    for prefix in USER_SCOPED_PREFIXES:
        if path.startswith(prefix + "/"):
            owner = path[len(prefix) + 1 :].split("/", 1)[0]
            return owner or None
    return None


def destination_path(destination: str) -> str:
    """The decoded path of a ``Destination`` header (absolute URL or absolute path); a header
    that is no URL at all (e.g. ``http://[::1``) is a 400."""
    try:
        return unquote(urlsplit(destination).path)
    except ValueError as exc:
        raise DAVError(HTTP_BAD_REQUEST, f"malformed Destination header: {exc}") from None

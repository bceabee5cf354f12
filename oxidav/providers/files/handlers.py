"""The files provider's request hook: where oxidav closes WsgiDAV's gaps for its files.

``FilesProvider.custom_request_handler`` sends every request here. WsgiDAV's method handlers do
the work except where they fall short (docs/wsgidav.md#gaps-closed):

- PUT: ``files_put`` (byte counting, preconditions on missing targets, no placeholder);
- GET / HEAD of a file: ``files_get`` (multipart/byteranges);
- PROPFIND: ``Depth: infinity`` — and a missing Depth, which means infinity (RFC 4918 §9.1) —
  is refused with 403 ``propfind-finite-depth`` unless ``propfind_infinity_limit`` allows it;
  Depth 0 and 1 are answered by ``files_propfind`` (XML written directly, one query per page);
- PROPPATCH: all changes are written in one transaction (§9.2: all or nothing);
- LOCK on an unmapped URL: needs write access to the parent, and the empty file it creates is
  removed again if the lock is refused;
- locks taken through a public link are held by the link's principal (``ENVIRON_LOCK_HOLDER``);
- UNLOCK by the owner of the node of a lock someone else holds: allowed with its token, as in
  Nextcloud (``oxidav.authz.lock_holders.may_unlock`` decides; WsgiDAV lets only the holder);
- COPY / MOVE: a Destination in another user's tree is 404; 201 when the destination was new;
- OPTIONS: ``DAV: 1, 2, 3`` (RFC 4918 §18).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit

from wsgidav import util
from wsgidav.dav_error import (
    HTTP_BAD_REQUEST,
    HTTP_FORBIDDEN,
    HTTP_NO_CONTENT,
    HTTP_NOT_FOUND,
    DAVError,
    PRECONDITION_CODE_PropfindFiniteDepth,
)
from wsgidav.request_server import RequestServer

from oxidav.authz.lock_holders import may_unlock
from oxidav.environ import (
    ENVIRON_CREATED,
    ENVIRON_LOCK_HOLDER,
    ENVIRON_PROPPATCH,
    node_of,
)
from oxidav.providers.files.context import Target, forget
from oxidav.providers.files.get import send_file
from oxidav.providers.files.propfind import handle_propfind
from oxidav.providers.files.put import handle_put
from oxidav.providers.files.resources import FileResource
from oxidav.tree import count_subtree, set_mtime
from oxidav.tree.props import set_props
from oxidav.tree.trash import delete_live_file


def dispatch(
    provider: Any, environ: dict[str, Any], start_response: Any, default_handler: Any
) -> Iterable[bytes]:
    method = environ["REQUEST_METHOD"]
    server = getattr(default_handler, "__self__", None) or RequestServer(provider)
    holder = environ.get(ENVIRON_LOCK_HOLDER)
    if holder:  # a public link: its locks are the link's (released with it)
        environ["wsgidav.user_name"] = holder
    if method == "PUT":
        return handle_put(provider, server, environ, start_response)
    if method in ("GET", "HEAD"):
        res = provider.get_resource_inst(environ["PATH_INFO"], environ)
        if isinstance(res, FileResource):
            return send_file(server, environ, start_response, res, head=method == "HEAD")
    elif method == "PROPFIND":
        _check_depth(provider, environ)
        answer = handle_propfind(provider, server, environ, start_response)
        if answer is not None:
            return answer
    elif method == "PROPPATCH":
        return _proppatch(provider, environ, start_response, default_handler)
    elif method == "LOCK":
        return _lock(provider, server, environ, start_response, default_handler)
    elif method == "UNLOCK":
        return _unlock(provider, server, environ, start_response, default_handler)
    elif method in ("COPY", "MOVE"):
        _check_destination(provider, environ)
        return default_handler(environ, _created_status(environ, start_response))  # type: ignore[no-any-return]
    elif method == "OPTIONS":
        return default_handler(environ, _dav_header(provider, start_response))  # type: ignore[no-any-return]
    return default_handler(environ, start_response)  # type: ignore[no-any-return]


def _check_depth(provider: Any, environ: dict[str, Any]) -> None:
    depth = environ.get("HTTP_DEPTH", "infinity").strip().lower()
    if depth != "infinity":
        return
    limit = provider.backend.propfind_infinity_limit
    refused = limit <= 0
    if not refused:
        target = provider.locate(environ["PATH_INFO"], environ)
        if isinstance(target, Target):
            with provider.backend.db.read() as session:
                refused = count_subtree(session, target.user_id, target.tree_path) >= limit
    if refused:
        raise DAVError(HTTP_FORBIDDEN, err_condition=PRECONDITION_CODE_PropfindFiniteDepth)


def _proppatch(
    provider: Any, environ: dict[str, Any], start_response: Any, default_handler: Any
) -> Iterable[bytes]:
    """Run WsgiDAV's PROPPATCH with the response held back, commit, then answer."""
    held: list[Any] = []

    def hold(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        held[:] = [status, headers, exc_info]
        return lambda data: None

    body = list(default_handler(environ, hold))
    changes = environ.pop(ENVIRON_PROPPATCH, [])
    if changes:
        per_node: dict[int, list[tuple[str, bytes | None]]] = defaultdict(list)
        with provider.backend.db.write() as session:
            for node_id, name, value in changes:
                if name == "{DAV:}getlastmodified":
                    set_mtime(session, node_id, datetime.fromtimestamp(value, UTC))
                else:
                    per_node[node_id].append((name, value))
            for node_id, node_changes in per_node.items():
                set_props(session, node_id, node_changes)
        forget(environ)
    start_response(*held)
    return body


def _lock(
    provider: Any, server: Any, environ: dict[str, Any], start_response: Any, default_handler: Any
) -> Iterable[bytes]:
    path = environ["PATH_INFO"]
    unmapped = provider.get_resource_inst(path, environ) is None
    if unmapped:
        parent = provider.get_resource_inst(util.get_uri_parent(path), environ)
        if parent is not None:
            server._check_write_permission(parent, "0", environ)
    try:
        result: Iterable[bytes] = default_handler(environ, start_response)
        return result
    except BaseException:
        node = node_of(environ)
        target = provider.locate(path, environ)
        if unmapped and node is not None and isinstance(target, Target):
            backend = provider.backend
            with backend.db.write() as session:
                delete_live_file(session, backend.chain, target.user_id, target.tree_path)
            forget(environ)
        raise


def _unlock(
    provider: Any, server: Any, environ: dict[str, Any], start_response: Any, default_handler: Any
) -> Iterable[bytes]:
    """WsgiDAV's UNLOCK, except that a lock on the URL held by someone else is released when
    ``may_unlock`` allows the caller (the node's owner); every other case is WsgiDAV's."""
    manager = provider.lock_manager
    token = environ.get("HTTP_LOCK_TOKEN", "").strip().strip("<>")
    res = provider.get_resource_inst(environ["PATH_INFO"], environ) if token else None
    if manager is None or res is None or util.get_content_length(environ) != 0:
        return default_handler(environ, start_response)  # type: ignore[no-any-return]
    caller = environ["wsgidav.user_name"]
    lock = manager.get_lock(token)
    if (
        lock is None
        or lock["principal"] == caller
        or not manager.is_url_locked_by_token(res.get_ref_url(), token)
        or not may_unlock(caller, lock).allowed
    ):
        return default_handler(environ, start_response)  # type: ignore[no-any-return]
    server._evaluate_if_headers(res, environ)
    manager.release(token)
    return util.send_status_response(environ, start_response, HTTP_NO_CONTENT)  # type: ignore[no-any-return]


def _check_destination(provider: Any, environ: dict[str, Any]) -> None:
    """A Destination below this provider must be in the caller's own tree (else 404) and
    name a valid node (else 400: a name too long, ``..``)."""
    raw = environ.get("HTTP_DESTINATION")
    if not raw:
        return
    dest = util.normalize_path(unquote(urlsplit(raw).path))
    prefix = provider.share_path  # oxidav's layers see Destination without base_path
    if not dest.lower().startswith(prefix.lower() + "/"):
        return  # another share: WsgiDAV answers 502
    path = dest[len(prefix) :]
    if provider.locate(path, environ) is None:
        reason = provider.name_error(path)
        if reason is not None:
            raise DAVError(HTTP_BAD_REQUEST, f"invalid destination: {reason}")
        raise DAVError(HTTP_NOT_FOUND, "no such destination")


def _created_status(environ: dict[str, Any], start_response: Any) -> Any:
    def wrapped(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        if status.startswith("204") and environ.get(ENVIRON_CREATED):
            status = "201 Created"
        return start_response(status, headers, exc_info)

    return wrapped


def _dav_header(provider: Any, start_response: Any) -> Any:
    """Make sure ``DAV`` lists classes 1, 2 (with locking) and 3, keeping any other entry."""
    classes = ["1", "2", "3"] if provider.lock_manager is not None else ["1", "3"]

    def wrapped(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        result = []
        for key, value in headers:
            if key.lower() == "dav":
                tokens = [t.strip() for t in value.split(",") if t.strip()]
                rest = [t for t in tokens if t not in ("1", "2", "3")]
                value = ", ".join([*classes, *rest])
            result.append((key, value))
        return start_response(status, result, exc_info)

    return wrapped

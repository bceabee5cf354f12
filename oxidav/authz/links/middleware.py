"""Authentication and authorization of WebDAV through a public link, at both of Nextcloud's
public WebDAV endpoints:

- ``/public.php/webdav/…``: HTTP Basic credentials carry the link token as user name and the
  link password (empty when there is none) as password. An unknown, deleted or expired token
  and a wrong password are all 401, so the answer does not tell which tokens exist.
- ``/public.php/dav/files/<token>/…`` (Nextcloud 29+, what its web UI and newer clients use):
  the token is the first path segment; Basic credentials are needed only for a link with a
  password (the user name is ignored). As in Nextcloud, an unknown token is 404 and a missing or
  wrong password 401.

This middleware stands where ``OxiHTTPAuthenticator`` + ``AuthzMiddleware`` stand in the user
DAV stack: it opens the link (``LinkGate.open``), asks ``LinkGate.decide`` whether the method
may run there, and leaves the link's ``TreeView`` in ``environ`` — the files provider below then
serves the link's tree, exactly as it serves a user's (one WebDAV surface).

``/s/<token>`` (``oxidav.authz.links.pages``) opens the link itself (password form,
cookie) and passes the opened link on in ``environ[ENVIRON_LINK]``; such a request skips the
Basic step but is decided here like any other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from wsgidav.dav_error import HTTP_BAD_REQUEST, HTTP_MEDIATYPE_NOT_SUPPORTED, DAVError
from wsgidav.mw.base_mw import BaseMiddleware

from oxidav.authz.authn.basic_auth import parse_basic_credentials
from oxidav.authz.authn.login_refusals import HTTP_TOO_MANY_REQUESTS
from oxidav.authz.links.access import Credentials, LinkDenied, LinkGate, deny_line
from oxidav.authz.links.store import LiveLink, link_principal
from oxidav.environ import ENVIRON_LINK, ENVIRON_LOCK_HOLDER, ENVIRON_VIEWS
from oxidav.origin import client_address
from oxidav.tree import InvalidName, normalize_path
from oxidav.urls import destination_path

LINK_REALM = "oxidav public link"
#: ``config["oxidav"][TOKEN_IN_PATH]``: the first path segment below the share is the token.
TOKEN_IN_PATH = "token_in_path"


def _challenge() -> list[tuple[str, str]]:
    return [("WWW-Authenticate", f'Basic realm="{LINK_REALM}", charset="UTF-8"')]


def _basic(header: str, *, user_required: bool) -> tuple[str, str]:
    """(user name, password) of Basic credentials; a malformed header is 400."""
    try:
        return parse_basic_credentials(header, user_required=user_required)
    except ValueError as exc:
        raise DAVError(HTTP_BAD_REQUEST, f"Malformed Authorization header: {exc}") from None


def _valid_tree_path(tree_path: str | None) -> bool:
    """Whether a mapped path names a place inside the view (no ``..``, no bad names)."""
    if tree_path is None:
        return False
    try:
        normalize_path(tree_path)
    except InvalidName:
        return False
    return True


def _pretend_created(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """A file drop's MKCOL: 201 and nothing made, whatever the path names (RFC 4918 §9.3.1's
    415 for a body is kept: that depends on the request alone). The path's names are checked
    as for any creation."""
    if environ.get("CONTENT_LENGTH", "").strip() not in ("", "0") or environ.get(
        "HTTP_TRANSFER_ENCODING"
    ):
        raise DAVError(HTTP_MEDIATYPE_NOT_SUPPORTED, "MKCOL with a body is not supported")
    try:
        normalize_path(environ.get("PATH_INFO", ""))
    except InvalidName as exc:
        raise DAVError(HTTP_BAD_REQUEST, str(exc)) from None
    start_response("201 Created", [("Content-Length", "0")])
    return [b""]


class PublicLinkMiddleware(BaseMiddleware):  # type: ignore[misc]
    def __init__(self, wsgidav_app: Any, next_app: Any, config: dict[str, Any]) -> None:
        super().__init__(wsgidav_app, next_app, config)
        self.gate: LinkGate = config["oxidav"]["links"]
        self.token_in_path: bool = config["oxidav"].get(TOKEN_IN_PATH, False)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        url_root = environ.get("SCRIPT_NAME", "").rstrip("/")
        path = url_root + environ.get("PATH_INFO", "")
        link = environ.get(ENVIRON_LINK)
        if self.token_in_path:
            token = environ.get("PATH_INFO", "").lstrip("/").split("/", 1)[0]
            if not token:
                raise DAVError(404, "a link token is required in the path")
            url_root = f"{url_root}/{token}"
            if not isinstance(link, LiveLink):
                link = self._open_path_token(environ, token)
        elif not isinstance(link, LiveLink):
            link = self._open(environ)
        view = self.gate.view(link, url_root)
        method = environ.get("REQUEST_METHOD", "GET")
        rel_path = path[len(url_root) :]
        raw_destination = environ.get("HTTP_DESTINATION")
        inside = None
        if raw_destination:
            inside = _valid_tree_path(view.tree_path(destination_path(raw_destination)))

        decision = self.gate.decide(
            link,
            method,
            rel_path,
            depth=environ.get("HTTP_DEPTH", "infinity").strip().lower(),
            destination_inside=inside,
        )
        if not decision.allowed:
            address = client_address(environ)
            deny_line(link.token, link.id, f"{method} {path}", decision, address)
            raise DAVError(decision.status, decision.reason)
        if self.gate.drop_mkcol(link, method):
            return _pretend_created(environ, start_response)
        environ[ENVIRON_VIEWS] = [view]
        environ["wsgidav.auth.user_name"] = ""
        # Locks taken through the link are held by the link (released with it).
        environ[ENVIRON_LOCK_HOLDER] = link_principal(link.id)
        environ["wsgidav.auth.realm"] = LINK_REALM
        result: Iterable[bytes] = self.next_app(environ, start_response)
        return result

    def _open_path_token(self, environ: dict[str, Any], token: str) -> LiveLink:
        """Open the link of a token taken from the path: the password, if the link has one,
        comes as the password of Basic credentials (any user name)."""
        header = environ.get("HTTP_AUTHORIZATION", "")
        password = _basic(header, user_required=False)[1] if header else None
        credentials = Credentials(password=password, address=client_address(environ))
        try:
            return self.gate.open(token, credentials, "webdav")
        except LinkDenied as denied:
            if denied.status == 401:
                raise DAVError(401, denied.reason, add_headers=_challenge()) from None
            raise DAVError(denied.status, denied.reason, add_headers=denied.headers) from None

    def _open(self, environ: dict[str, Any]) -> LiveLink:
        header = environ.get("HTTP_AUTHORIZATION", "")
        if not header:
            raise DAVError(401, "a link token is required", add_headers=_challenge())
        token, password = _basic(header, user_required=True)
        credentials = Credentials(password=password, address=client_address(environ))
        try:
            return self.gate.open(token, credentials, "webdav")
        except LinkDenied as denied:
            if denied.status == HTTP_TOO_MANY_REQUESTS:
                raise DAVError(denied.status, denied.reason, add_headers=denied.headers) from None
            raise DAVError(401, "invalid link credentials", add_headers=_challenge()) from None

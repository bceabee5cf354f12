"""The Nextcloud OCS Share API: ``/ocs/v{1,2}.php/apps/files_sharing/api/v1/shares[/<id>]``.

- ``GET  …/shares``: the caller's shares (``path``, ``reshares``, ``shared_with_me=true``);
- ``POST …/shares``: share ``path`` with a user (``shareType`` 0) or group (1) named by
  ``shareWith``, with a ``permissions`` bitmask and an optional ``expireDate``; or make a
  public link (``shareType`` 3: ``password``, ``publicUpload``, ``label``; see ``link_shares``);
- ``GET | PUT | DELETE …/shares/<id>``: one share; PUT changes ``permissions`` / ``expireDate``.

Parameters come from the query string and from a form-encoded or JSON body. Like every OCS
call, each request carries its own Basic credentials (checked by ``Authenticator``). Answers use
the OCS envelope (``oxidav.nextcloud.ocs``): v1 answers HTTP 200 with the failure code in the
envelope (except 401), v2 the HTTP status itself. The work is done by ``sharing_ops``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from oxidav.authz.authn.authenticator import LoginRefused
from oxidav.authz.authn.basic_auth import parse_basic_credentials
from oxidav.authz.authn.domain_controller import REALM
from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants.engine import GrantEngine
from oxidav.nextcloud import ocs
from oxidav.nextcloud.capabilities import DEFAULT_SHARE_PERMISSIONS
from oxidav.nextcloud.link_shares import SHARE_LINK, LinkShares, is_link_id
from oxidav.nextcloud.sharing_ops import ShareError, ShareService
from oxidav.origin import client_address, public_base
from oxidav.services import Services

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

SHARING_PREFIXES = ("/ocs/v1.php/apps/files_sharing", "/ocs/v2.php/apps/files_sharing")
_SHARES = "/api/v1/shares"
_MAX_BODY = 64 * 1024
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    503: "Service Unavailable",
}


def _params(environ: WSGIEnvironment) -> dict[str, str]:
    """Query parameters, overridden by a form-encoded or JSON body's."""
    params = {k: v[0] for k, v in parse_qs(str(environ.get("QUERY_STRING", ""))).items()}
    try:
        length = min(int(environ.get("CONTENT_LENGTH") or 0), _MAX_BODY)
    except ValueError:
        length = 0
    if length <= 0:
        return params
    body = environ["wsgi.input"].read(length)
    if "json" in str(environ.get("CONTENT_TYPE", "")):
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            raise ShareError(400, "Invalid JSON body") from None
        if isinstance(data, Mapping):
            params.update({str(k): "" if v is None else str(v) for k, v in data.items()})
    else:
        decoded = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        params.update({k: v[0] for k, v in decoded.items()})
    return params


def _int(params: Mapping[str, str], name: str, default: int | None = None) -> int | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ShareError(400, f"Invalid {name}") from None


def _flag(params: Mapping[str, str], name: str) -> bool:
    return params.get(name, "").lower() in ("true", "1", "yes")


class SharingApp:
    """The WSGI app of the Share API, a route of ``oxidav.routes.Router``."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.shares = ShareService(GrantEngine(services.db), services.settings.share_folder)
        self.links = LinkShares(self.shares, services.authenticator.hashing)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        version = 2 if path.startswith("/ocs/v2.php") else 1
        as_json = ocs.wants_json(environ)
        rest = path.split("/apps/files_sharing", 1)[1].rstrip("/")
        try:
            principal = self._login(environ)
            if not rest.startswith(_SHARES):
                raise ShareError(404, "Not found")
            tail = rest[len(_SHARES) :].lstrip("/")
            data = self._dispatch(environ, principal, tail)
        except _Unauthorized as exc:
            return self._answer(
                start_response, version, as_json, exc.status, exc.message, [], exc.headers
            )
        except ShareError as exc:
            return self._answer(start_response, version, as_json, exc.status, exc.message, [])
        except LoginRefused as refused:  # a link password's hashing found the gate full
            retry = [refused.retry_after_header]
            status, reason = refused.status, refused.reason
            return self._answer(start_response, version, as_json, status, reason, [], retry)
        return self._answer(start_response, version, as_json, 200, "OK", data)

    def _dispatch(self, environ: WSGIEnvironment, principal: Principal, tail: str) -> Any:
        method = environ.get("REQUEST_METHOD", "GET")
        params = _params(environ)
        db = self.services.db
        base_url = public_base(environ)
        if not tail:
            if method == "GET":
                with db.read() as session:
                    shares = self.shares.list_shares(
                        session,
                        principal,
                        path=params.get("path", ""),
                        reshares=_flag(params, "reshares"),
                        shared_with_me=_flag(params, "shared_with_me"),
                    )
                    if _flag(params, "shared_with_me"):
                        return shares
                    path = params.get("path", "")
                    node_id = self.shares.node_at(session, principal, path).id if path else None
                    return shares + self.links.list_links(session, principal, base_url, node_id)
            if method == "POST" and _int(params, "shareType", -1) == SHARE_LINK:
                with db.write() as session:
                    return self.links.create(
                        session,
                        principal,
                        base_url,
                        path=params.get("path", ""),
                        permissions=_int(params, "permissions"),
                        public_upload=_flag(params, "publicUpload"),
                        password=params.get("password", ""),
                        expire_date=params.get("expireDate", ""),
                        label=params.get("label", ""),
                    )
            if method == "POST":
                with db.write() as session:
                    made = self.shares.create(
                        session,
                        principal,
                        path=params.get("path", ""),
                        share_type=_int(params, "shareType", -1) or 0,
                        share_with=params.get("shareWith", ""),
                        permissions=_int(params, "permissions", DEFAULT_SHARE_PERMISSIONS) or 0,
                        expire_date=params.get("expireDate", ""),
                    )
                self.shares.name_mount(made)
                return made
            raise ShareError(405, "Method not allowed")
        if not tail.isdigit():
            raise ShareError(404, "Wrong share ID, share doesn't exist")
        share_id = int(tail)
        if is_link_id(share_id):
            return self._link(environ, principal, share_id, params, base_url)
        if method == "GET":
            with db.read() as session:
                return [self.shares.get(session, principal, share_id)]
        if method == "PUT":
            permissions = _int(params, "permissions")
            expire = params.get("expireDate")
            if permissions is None and expire is None:
                raise ShareError(400, "Wrong or no update parameter given")
            with db.write() as session:
                return self.shares.update(
                    session, principal, share_id, permissions=permissions, expire_date=expire
                )
        if method == "DELETE":
            with db.write() as session:
                self.shares.delete(session, principal, share_id)
            return []
        raise ShareError(405, "Method not allowed")

    def _link(
        self,
        environ: WSGIEnvironment,
        principal: Principal,
        share_id: int,
        params: dict[str, str],
        base_url: str,
    ) -> Any:
        """``GET | PUT | DELETE …/shares/<id>`` of a public link."""
        method = environ.get("REQUEST_METHOD", "GET")
        db = self.services.db
        if method == "GET":
            with db.read() as session:
                return [self.links.get(session, principal, share_id, base_url)]
        if method == "PUT":
            changes = ("permissions", "publicUpload", "password", "expireDate", "label")
            if not any(name in params for name in changes):
                raise ShareError(400, "Wrong or no update parameter given")
            upload = params.get("publicUpload")
            with db.write() as session:
                return self.links.update(
                    session,
                    principal,
                    share_id,
                    base_url,
                    permissions=_int(params, "permissions"),
                    public_upload=None if upload is None else _flag(params, "publicUpload"),
                    password=params.get("password"),
                    expire_date=params.get("expireDate"),
                    label=params.get("label"),
                )
        if method == "DELETE":
            with db.write() as session:
                self.links.delete(session, principal, share_id)
            return []
        raise ShareError(405, "Method not allowed")

    def _login(self, environ: WSGIEnvironment) -> Principal:
        header = environ.get("HTTP_AUTHORIZATION", "")
        if header:
            try:
                name, password = parse_basic_credentials(header)
            except ValueError:
                raise ShareError(400, "Bad credentials") from None
            try:
                principal = self.services.authenticator.authenticate(
                    name, password, client_address(environ)
                )
            except LoginRefused as refused:
                retry = [refused.retry_after_header]
                raise _Unauthorized(refused.status, refused.reason, retry) from None
            if principal is not None:
                return principal
        challenge = [("WWW-Authenticate", f'Basic realm="{REALM}", charset="UTF-8"')]
        raise _Unauthorized(401, "Current user is not logged in", challenge)

    def _answer(
        self,
        start_response: StartResponse,
        version: int,
        as_json: bool,
        status: int,
        message: str,
        data: Any,
        extra: list[tuple[str, str]] | None = None,
    ) -> Iterable[bytes]:
        ok = status == 200
        if ok:
            code = ocs.OK_V1 if version == 1 else ocs.OK_V2
        else:
            code = ocs.NOT_LOGGED_IN if status == 401 else status
        body, content_type = ocs.render(ocs.envelope(code, message, data, ok=ok), as_json)
        http = status if (version == 2 or status in (401, 429, 503)) else 200
        headers = [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-cache, no-store, must-revalidate"),
            *(extra or []),
        ]
        start_response(f"{http} {_REASONS.get(http, 'Error')}", headers)
        return [body]


class _Unauthorized(Exception):
    def __init__(self, status: int, message: str, headers: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers

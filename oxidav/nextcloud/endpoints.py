"""The non-DAV Nextcloud endpoints: ``/status.php`` and the OCS ``cloud/capabilities`` and
``cloud/user`` calls (docs/nextcloud-protocol.md#status-and-discovery); Login Flow v2 lives in
``oxidav.nextcloud.login_flow`` and is routed here too.

They are routes of ``oxidav.routes.Router`` and so run before the DAV stack's authentication:
status.php and the capabilities are public (as in Nextcloud), ``cloud/user`` checks the Basic
credentials itself with ``Authenticator.authenticate``. The ``OCS-APIRequest`` header, which
Nextcloud demands only to stop cross-site requests riding on a browser session cookie, is not
required: oxidav has no cookie sessions, every OCS call carries its own credentials.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from oxidav.authz.authn.authenticator import LoginRefused
from oxidav.authz.authn.basic_auth import parse_basic_credentials
from oxidav.authz.authn.domain_controller import REALM
from oxidav.authz.authn.principal import Principal
from oxidav.db.models.users import User
from oxidav.nextcloud import capabilities as caps
from oxidav.nextcloud import ocs
from oxidav.nextcloud.client_version import offers_bulk
from oxidav.nextcloud.login_flow import LOGIN_V2, LoginFlowApp
from oxidav.nextcloud.sharing import SHARING_PREFIXES, SharingApp
from oxidav.origin import client_address
from oxidav.services import Services
from oxidav.tree import quota_limit, used_bytes

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("oxidav.nextcloud")

STATUS_PATH = "/status.php"
OCS_PREFIX = "/ocs"
_OCS_VERSIONS = {"/ocs/v1.php": 1, "/ocs/v2.php": 2}
#: Nextcloud's value of ``quota.quota`` for an unlimited quota.
UNLIMITED = -3

Headers = Sequence[tuple[str, str]]


def _respond(
    start_response: StartResponse, status: str, body: bytes, content_type: str, extra: Headers = ()
) -> Iterable[bytes]:
    headers = [
        ("Content-Type", content_type),
        ("Content-Length", str(len(body))),
        ("Cache-Control", "no-cache, no-store, must-revalidate"),
        *extra,
    ]
    start_response(status, headers)
    return [body]


@functools.cache
def status_body(maintenance: bool = False) -> bytes:
    return ocs.to_json(caps.status(maintenance))


@functools.cache
def capabilities_body(
    api_version: int, as_json: bool, bulk: bool = True, chunking: tuple[int, int, int] | None = None
) -> tuple[bytes, str]:
    """The capabilities answer, rendered once per (API version, format, bulk, chunk
    parameters) and reused."""
    code = ocs.OK_V1 if api_version == 1 else ocs.OK_V2
    data = {"version": caps.version_block(), "capabilities": caps.capabilities(bulk, chunking)}
    return ocs.render(ocs.envelope(code, "OK", data), as_json)


class StatusApp:
    """``GET /status.php``: the JSON object the client checks for ``installed``, and
    ``maintenance`` while ``ready`` (``oxidav.observability.readiness``: shared, rate-limited
    probes) says the database or the blob store does not answer."""

    def __init__(self, ready: Callable[[], bool] | None = None) -> None:
        self.ready = ready

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return _respond(
                start_response,
                "405 Method Not Allowed",
                b"",
                "text/plain",
                [("Allow", "GET, HEAD")],
            )
        maintenance = self.ready is not None and not self.ready()
        body = status_body(maintenance)
        result = _respond(start_response, "200 OK", body, ocs.JSON_TYPE)
        return [b""] if environ.get("REQUEST_METHOD") == "HEAD" else result


class OcsApp:
    """``/ocs/v{1,2}.php/cloud/{capabilities,user}``."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        api_prefix, _, call = path.partition(".php/")
        api_version = _OCS_VERSIONS.get(api_prefix + ".php")
        as_json = ocs.wants_json(environ)
        if api_version is None or call.rstrip("/") not in ("cloud/capabilities", "cloud/user"):
            return self._failure(start_response, api_version or 1, as_json, 404, "Not found")
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return self._failure(start_response, api_version, as_json, 405, "Method not allowed")
        if call.rstrip("/") == "cloud/capabilities":
            settings = self.services.settings
            bulk = offers_bulk(
                str(environ.get("HTTP_USER_AGENT", "")),
                settings.nextcloud_bulk_upload,
                settings.nextcloud_bulk_min_desktop,
            )
            chunking = (
                settings.blob_chunk_min,
                settings.blob_chunk_avg,
                settings.blob_chunk_max,
            )
            body, content_type = capabilities_body(api_version, as_json, bulk, chunking)
            return _respond(start_response, "200 OK", body, content_type)
        return self._user(environ, start_response, api_version, as_json)

    def _user(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        api_version: int,
        as_json: bool,
    ) -> Iterable[bytes]:
        header = environ.get("HTTP_AUTHORIZATION", "")
        principal: Principal | None = None
        if header:
            try:
                name, password = parse_basic_credentials(header)
            except ValueError as exc:
                log.warning(
                    "OCS: bad Authorization header from %s: %s", client_address(environ), exc
                )
                return self._failure(start_response, api_version, as_json, 400, "Bad credentials")
            try:
                principal = self.services.authenticator.authenticate(
                    name, password, client_address(environ)
                )
            except LoginRefused as refused:
                return self._failure(
                    start_response,
                    api_version,
                    as_json,
                    refused.status,
                    refused.reason,
                    [refused.retry_after_header],
                )
        if principal is None:
            return self._failure(
                start_response,
                api_version,
                as_json,
                401,
                "Current user is not logged in",
                [("WWW-Authenticate", f'Basic realm="{REALM}", charset="UTF-8"')],
            )
        code = ocs.OK_V1 if api_version == 1 else ocs.OK_V2
        body, content_type = ocs.render(
            ocs.envelope(code, "OK", self.user_data(principal)), as_json
        )
        return _respond(start_response, "200 OK", body, content_type)

    def user_data(self, principal: Principal) -> dict[str, Any]:
        """The ``data`` of ``cloud/user``: id (the DAV user name), display name, email, quota."""
        settings = self.services.settings
        with self.services.db.read() as session:
            row = session.execute(
                select(User.display_name, User.email).where(User.id == principal.user_id)
            ).one()
            limit = quota_limit(session, principal.user_id, settings.default_quota_bytes)
            used = used_bytes(session, principal.user_id)
        display = row.display_name or principal.username
        quota: dict[str, Any] = {"used": used}
        if limit is None:
            quota.update(quota=UNLIMITED, total=UNLIMITED, free=UNLIMITED, relative=0)
        else:
            relative = round(100 * used / limit, 2) if limit else 0
            quota.update(quota=limit, total=limit, free=max(0, limit - used), relative=relative)
        return {
            "enabled": True,
            "id": principal.username,
            "display-name": display,
            "displayname": display,
            "email": row.email,
            "quota": quota,
        }

    def _failure(
        self,
        start_response: StartResponse,
        api_version: int,
        as_json: bool,
        http_status: int,
        message: str,
        extra: Headers = (),
    ) -> Iterable[bytes]:
        # v1 always answers HTTP 200 with the failure in the envelope, except for 401, 429 and
        # 503, which clients must see; v2 answers with the HTTP status (Nextcloud OCS behaviour).
        code = ocs.NOT_LOGGED_IN if http_status == 401 else http_status
        body, content_type = ocs.render(ocs.envelope(code, message, [], ok=False), as_json)
        status = http_status if (api_version == 2 or http_status in (401, 429, 503)) else 200
        return _respond(start_response, _status_line(status), body, content_type, extra)


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    503: "Service Unavailable",
}


def _status_line(code: int) -> str:
    return f"{code} {_REASONS.get(code, 'Error')}"


def nextcloud_routes(
    services: Services, ready: Callable[[], bool] | None = None
) -> list[tuple[str, WSGIApplication]]:
    """The Router entries of this room (prefix, app); ``ready`` drives status.php's
    ``maintenance``."""
    sharing = SharingApp(services)
    return [
        (STATUS_PATH, StatusApp(ready)),
        *((prefix, sharing) for prefix in SHARING_PREFIXES),  # before the OCS catch-all
        (OCS_PREFIX, OcsApp(services)),
        (LOGIN_V2, LoginFlowApp(services)),
    ]

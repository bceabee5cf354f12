"""``/s/<token>``: the public link pages (a route of ``oxidav.routes.Router``).

- a file link: ``GET /s/<token>`` and ``GET /s/<token>/download`` download the file;
- a folder link: ``GET /s/<token>[?path=/sub]`` is a small HTML listing, and
  ``GET /s/<token>/download?path=/sub/x`` downloads one file of it, and
  ``GET /s/<token>/download[?path=/sub]`` on a folder downloads it as a streamed ZIP
  (``zip_stream``);
- an upload-only link (file drop): a page saying where to upload (``/public.php/webdav``);
  nothing is listed or downloadable;
- a password link asks for the password: HTTP Basic (any user name, the link password) or the
  HTML form (``POST /s/<token>``), which sets an HMAC-signed, HttpOnly, SameSite cookie bound
  to the link's current password (``LinkGate.cookie_value``).

Opening the link is ``LinkGate.open`` (rate limit, audit). Downloads are not served here: the
request is handed to the public-link DAV app (``/public.php/webdav``, the files provider), so
ETag, conditionals and Range come from the one reader every GET uses (with its
``oxidav.download_headers``); this module makes every download an attachment under the
sandbox policy.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from oxidav.authz.authn.basic_auth import parse_basic_credentials
from oxidav.authz.authn.login_refusals import HashingBusy
from oxidav.authz.links import html
from oxidav.authz.links.access import Credentials, LinkDenied, LinkGate
from oxidav.authz.links.store import LinkMode, LiveLink
from oxidav.blobs import BlobChain
from oxidav.download_headers import SANDBOX_POLICY, attachment
from oxidav.environ import ENVIRON_LINK, base_path_of
from oxidav.origin import client_address, public_base
from oxidav.tree import InvalidName, list_children, list_subtree, normalize_path, resolve
from oxidav.urls import PUBLIC_SHARE, PUBLIC_WEBDAV
from oxidav.zip_stream import zip_folder

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("oxidav.nextcloud")

COOKIE = "oxidav_link"
#: Entries one listing page shows at most.
LISTING_LIMIT = 2000
_MAX_FORM = 4096
#: Headers of the DAV reader's answer that a link download sets itself.
_DOWNLOAD_HEADERS = frozenset(
    {"content-disposition", "x-content-type-options", "content-security-policy"}
)
_REASONS = {
    200: "OK",
    303: "See Other",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    503: "Service Unavailable",
}


def _cookie(environ: WSGIEnvironment) -> str | None:
    raw = str(environ.get("HTTP_COOKIE", ""))
    if not raw:
        return None
    try:
        jar: SimpleCookie = SimpleCookie(raw)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


def _wsgi_path(path: str) -> str:
    """A decoded path in the WSGI (latin-1 transported UTF-8) form of PATH_INFO."""
    return path.encode("utf-8").decode("latin-1")


class PublicLinkPages:
    def __init__(self, gate: LinkGate, dav: WSGIApplication, chain: BlobChain) -> None:
        self.gate = gate
        self.dav = dav
        self.chain = chain

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        answer = self._route(environ, start_response)
        if environ.get("REQUEST_METHOD") == "HEAD" and isinstance(answer, list):
            return [b""]  # a page's headers only (downloads answer HEAD in the DAV app)
        return answer

    def _route(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        raw = str(environ.get("PATH_INFO", ""))[len(PUBLIC_SHARE) + 1 :]
        token, _, action = raw.partition("/")
        action = action.rstrip("/")
        method = str(environ.get("REQUEST_METHOD", "GET"))
        if action not in ("", "download") or not token:
            return self._answer(start_response, 404, html.message("Not found", "No such share."))
        allowed = ("GET", "HEAD", "POST") if action == "" else ("GET", "HEAD")
        if method not in allowed:
            body = html.message("Method not allowed", f"{method} is not allowed here.")
            return self._answer(start_response, 405, body, [("Allow", ", ".join(allowed))])
        base = f"{base_path_of(environ)}{PUBLIC_SHARE}/{token}"
        posted = self._form_password(environ) if method == "POST" else None
        try:
            link = self.gate.open(token, self._credentials(environ, posted), "page")
        except LinkDenied as denied:
            # Browsers get the form (a Basic challenge would pop up their own dialog); other
            # HTTP clients get a Basic challenge (any user name, the link password).
            basic = "HTTP_AUTHORIZATION" in environ or "text/html" not in str(
                environ.get("HTTP_ACCEPT", "")
            )
            return self._denied(start_response, denied, base, basic)
        if method == "POST":
            return self._after_login(environ, start_response, link, base)
        query = parse_qs(str(environ.get("QUERY_STRING", "")))
        sub = query.get("path", [""])[0]
        return self._serve(environ, start_response, link, base, action, sub)

    # -- opening -----------------------------------------------------------------------------

    def _credentials(self, environ: WSGIEnvironment, posted: str | None) -> Credentials:
        password = posted
        header = str(environ.get("HTTP_AUTHORIZATION", ""))
        if password is None and header:
            try:
                password = parse_basic_credentials(header)[1]
            except ValueError:
                password = None
        return Credentials(password, _cookie(environ), client_address(environ))

    @staticmethod
    def _form_password(environ: WSGIEnvironment) -> str:
        try:
            length = min(int(environ.get("CONTENT_LENGTH") or 0), _MAX_FORM)
        except ValueError:
            length = 0
        body: bytes = environ["wsgi.input"].read(length) if length > 0 else b""
        fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        return fields.get("password", [""])[0]

    def _denied(
        self, start_response: StartResponse, denied: LinkDenied, base: str, basic: bool
    ) -> Iterable[bytes]:
        if denied.status == 404:
            return self._answer(start_response, 404, html.message("Not found", "No such share."))
        if denied.status == 429 and denied.reason == HashingBusy.default_reason:
            text = "The server is busy. Try again in a moment."
            return self._answer(start_response, 429, html.message("Busy", text), denied.headers)
        if denied.status == 429:
            text = "Too many wrong passwords. Try again later."
            return self._answer(
                start_response, 429, html.message("Too many attempts", text), denied.headers
            )
        error = "The password is wrong. Try again." if denied.reason == "wrong password" else ""
        scheme = "Basic" if basic else "Form"
        challenge = [("WWW-Authenticate", f'{scheme} realm="oxidav public link"')]
        return self._answer(start_response, 401, html.password_form(base, error), challenge)

    def _after_login(
        self, environ: WSGIEnvironment, start_response: StartResponse, link: LiveLink, base: str
    ) -> Iterable[bytes]:
        headers = [("Location", base), ("Content-Length", "0")]
        if link.password_hash is not None:
            secure = "; Secure" if public_base(environ).startswith("https:") else ""
            cookie = (
                f"{COOKIE}={self.gate.cookie_value(link)}; Path={base}; HttpOnly; "
                f"SameSite=Lax; Max-Age={12 * 3600}{secure}"
            )
            headers.append(("Set-Cookie", cookie))
        start_response("303 See Other", [*headers, ("Cache-Control", "no-store")])
        return [b""]

    # -- serving -----------------------------------------------------------------------------

    def _serve(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        link: LiveLink,
        base: str,
        action: str,
        sub: str,
    ) -> Iterable[bytes]:
        not_found = html.message("Not found", "No such file or folder in this share.")
        try:
            rel = normalize_path(sub)
        except InvalidName:
            return self._answer(start_response, 404, not_found)
        if link.mode is LinkMode.UPLOAD:
            if action or rel:
                text = "This share only accepts uploads."
                return self._answer(start_response, 403, html.message("Upload only", text))
            webdav = base_path_of(environ) + PUBLIC_WEBDAV
            text = f"Upload files with WebDAV to {webdav}/ (user name: the share token)."
            return self._answer(start_response, 200, html.message("File drop", text))
        if not link.is_folder:
            if rel:
                return self._answer(start_response, 404, not_found)
            return self._download(environ, start_response, link, "", link.node_name)
        with self.gate.db.read() as session:
            node = resolve(session, link.owner_id, link.node_path + rel)
            children = (
                list_children(session, node.id, limit=LISTING_LIMIT + 1)
                if node is not None and node.is_folder and action == ""
                else []
            )
        if node is None:
            return self._answer(start_response, 404, not_found)
        if not node.is_folder:
            return self._download(environ, start_response, link, rel, node.name)
        if action == "download":
            return self._zip(environ, start_response, link, node.path, node.name or link.node_name)
        title = link.label or link.node_name or "Shared folder"
        truncated = len(children) > LISTING_LIMIT
        body = html.listing(base, title, rel, children[:LISTING_LIMIT], truncated)
        return self._answer(start_response, 200, body)

    def _zip(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        link: LiveLink,
        folder: str,
        name: str,
    ) -> Iterable[bytes]:
        """The folder at the owner's tree path ``folder`` as a streamed ZIP archive."""
        with self.gate.db.read() as session:
            nodes = list_subtree(session, link.owner_id, folder)
        headers = [
            ("Content-Type", "application/zip"),
            ("Content-Disposition", attachment(f"{name or 'download'}.zip")),
            ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"),
            ("Content-Security-Policy", SANDBOX_POLICY),
            ("Referrer-Policy", "no-referrer"),
        ]
        start_response("200 OK", headers)
        if environ.get("REQUEST_METHOD") == "HEAD":
            return [b""]
        return zip_folder(self.chain, folder, nodes)

    def _download(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        link: LiveLink,
        rel: str,
        name: str,
    ) -> Iterable[bytes]:
        """Hand the GET to the public DAV app (one reader: ETag, conditionals, Range)."""
        sub: dict[str, Any] = dict(environ)
        sub.update(
            {
                "SCRIPT_NAME": "",
                "PATH_INFO": _wsgi_path(PUBLIC_WEBDAV + rel),
                "QUERY_STRING": "",
                ENVIRON_LINK: link,
            }
        )
        for key in ("HTTP_DESTINATION", "HTTP_DEPTH", "HTTP_AUTHORIZATION"):
            sub.pop(key, None)

        def with_disposition(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            if status[:3] in ("200", "206"):
                # Always an attachment here (the DAV reader makes only active types one).
                headers = [(k, v) for k, v in headers if k.lower() not in _DOWNLOAD_HEADERS]
                headers.append(("Content-Disposition", attachment(name)))
                headers.append(("X-Content-Type-Options", "nosniff"))
                headers.append(("Content-Security-Policy", SANDBOX_POLICY))
                headers.append(("Referrer-Policy", "no-referrer"))
            return start_response(status, headers, exc_info)

        return self.dav(sub, with_disposition)

    @staticmethod
    def _answer(
        start_response: StartResponse,
        status: int,
        body: bytes,
        extra: list[tuple[str, str]] | None = None,
    ) -> Iterable[bytes]:
        headers = [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Length", str(len(body))),
            *html.SECURITY_HEADERS,
            *(extra or []),
        ]
        start_response(f"{status} {_REASONS.get(status, 'Error')}", headers)
        return [body]

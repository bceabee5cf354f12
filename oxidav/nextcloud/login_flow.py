"""Nextcloud Login Flow v2: how GUI and mobile clients obtain an app password.

1. ``POST /index.php/login/v2`` (no credentials) starts a flow and answers
   ``{"poll": {"token", "endpoint"}, "login": "<url>"}``.
2. The client opens ``login`` (``/index.php/login/v2/flow/<login token>``) in a browser: a small
   HTML form (user name + password + the flow's CSRF secret). A POST of the form checks the
   password with ``Authenticator.authenticate`` (throttled like every login) and marks the flow
   as granted to that user.
3. The client polls ``POST /index.php/login/v2/poll`` with ``token=<poll token>``: 404 until
   the flow is granted, then once ``{"server", "loginName", "appPassword"}`` — the app password
   is created right then (``accounts.create_app_password``) and the flow is deleted.

Flows live 20 minutes (``FLOW_LIFETIME``); tokens are stored as SHA-256 digests only.
"""

from __future__ import annotations

import hashlib
import html
import json
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from oxidav.authz.authn import accounts
from oxidav.authz.authn.authenticator import LoginRefused
from oxidav.db import utcnow
from oxidav.db.models.nextcloud import LoginFlow
from oxidav.db.models.users import User
from oxidav.origin import client_address, public_base
from oxidav.services import Services

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

LOGIN_V2 = "/index.php/login/v2"
FLOW_LIFETIME = timedelta(minutes=20)
MAX_FORM_BYTES = 16 * 1024


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _reply(
    start_response: StartResponse,
    status: str,
    body: bytes,
    content_type: str,
    extra: list[tuple[str, str]] | None = None,
) -> Iterable[bytes]:
    start_response(
        status,
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
            ("X-Frame-Options", "DENY"),
            ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'"),
            *(extra or []),
        ],
    )
    return [body]


def _json(start_response: StartResponse, status: str, data: object) -> Iterable[bytes]:
    body = json.dumps(data, separators=(",", ":")).encode("utf-8")
    return _reply(start_response, status, body, "application/json; charset=utf-8")


def _page(
    start_response: StartResponse,
    status: str,
    title: str,
    inner: str,
    extra: list[tuple[str, str]] | None = None,
) -> Iterable[bytes]:
    body = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:24em;margin:4em auto}"
        "input{display:block;width:100%;margin:.3em 0 1em}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{inner}</body></html>"
    ).encode()
    return _reply(start_response, status, body, "text/html; charset=utf-8", extra)


def _form(environ: WSGIEnvironment) -> dict[str, str]:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    raw = environ["wsgi.input"].read(min(max(length, 0), MAX_FORM_BYTES)) if length else b""
    fields = parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
    return {key: values[0] for key, values in fields.items()}


class LoginFlowApp:
    """The ``/index.php/login/v2`` routes."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "")
        rest = environ.get("PATH_INFO", "")[len(LOGIN_V2) :].strip("/")
        if rest == "" and method == "POST":
            return self.start(environ, start_response)
        if rest == "poll" and method == "POST":
            return self.poll(environ, start_response)
        if rest.startswith("flow/") and method in ("GET", "POST"):
            return self.flow(environ, start_response, rest[len("flow/") :])
        return _json(start_response, "404 Not Found", {"message": "not found"})

    def _expired_before(self) -> datetime:
        return utcnow() - FLOW_LIFETIME

    def start(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        """Step 1: a new flow with its poll token and login URL."""
        poll_token = secrets.token_urlsafe(48)
        login_token = secrets.token_urlsafe(48)
        with self.services.db.write() as session:
            session.execute(delete(LoginFlow).where(LoginFlow.created_at < self._expired_before()))
            session.add(
                LoginFlow(
                    poll_token_sha256=_digest(poll_token),
                    login_token_sha256=_digest(login_token),
                    csrf=secrets.token_urlsafe(32),
                    client_name=str(environ.get("HTTP_USER_AGENT", ""))[:255],
                )
            )
        base = public_base(environ)
        return _json(
            start_response,
            "200 OK",
            {
                "poll": {"token": poll_token, "endpoint": f"{base}{LOGIN_V2}/poll"},
                "login": f"{base}{LOGIN_V2}/flow/{login_token}",
            },
        )

    def _live_flow(self, session: Session, column: Any, token: str) -> LoginFlow | None:
        flow = session.scalar(select(LoginFlow).where(column == _digest(token)))
        if flow is None or flow.created_at < self._expired_before():
            return None
        return flow

    def flow(
        self, environ: WSGIEnvironment, start_response: StartResponse, login_token: str
    ) -> Iterable[bytes]:
        """Step 2: the browser page (GET) and its form submission (POST)."""
        with self.services.db.read() as session:
            flow = self._live_flow(session, LoginFlow.login_token_sha256, login_token)
            found = None if flow is None else (flow.id, flow.csrf, flow.user_id)
        if found is None:
            return _page(start_response, "404 Not Found", "Link expired", "<p>Start again.</p>")
        flow_id, csrf, granted = found
        if granted is not None:
            return _page(start_response, "200 OK", "Account connected", "<p>Done.</p>")
        if environ.get("REQUEST_METHOD") == "GET":
            return self._login_form(start_response, "200 OK", csrf, "")
        form = _form(environ)
        if not secrets.compare_digest(form.get("csrf", ""), csrf):
            return _page(start_response, "403 Forbidden", "Forbidden", "<p>Bad form token.</p>")
        name, password = form.get("user", ""), form.get("password", "")
        try:
            principal = self.services.authenticator.authenticate(
                name, password, client_address(environ)
            )
        except LoginRefused as refused:
            message = "Too many failed logins." if refused.status == 429 else "Server busy."
            return self._login_form(
                start_response, refused.status_line, csrf, message, [refused.retry_after_header]
            )
        if principal is None:
            return self._login_form(start_response, "401 Unauthorized", csrf, "Wrong password.")
        with self.services.db.write() as session:
            row = session.get(LoginFlow, flow_id)
            if row is not None:
                row.user_id = principal.user_id
        return _page(
            start_response,
            "200 OK",
            "Account connected",
            "<p>You can close this window and return to the app.</p>",
        )

    @staticmethod
    def _login_form(
        start_response: StartResponse,
        status: str,
        csrf: str,
        error: str,
        extra: list[tuple[str, str]] | None = None,
    ) -> Iterable[bytes]:
        message = f"<p role='alert'>{html.escape(error)}</p>" if error else ""
        inner = (
            f"{message}<form method='post'>"
            "<label>User name<input name='user' autocomplete='username' required></label>"
            "<label>Password<input name='password' type='password' "
            "autocomplete='current-password' required></label>"
            f"<input type='hidden' name='csrf' value='{html.escape(csrf, quote=True)}'>"
            "<button type='submit'>Grant access</button></form>"
        )
        return _page(start_response, status, "Connect to your account", inner, extra)

    def poll(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        """Step 3: the credentials, exactly once, after the user logged in."""
        token = _form(environ).get("token", "")
        with self.services.db.write() as session:
            flow = self._live_flow(session, LoginFlow.poll_token_sha256, token) if token else None
            if flow is None or flow.user_id is None:
                return _json(start_response, "404 Not Found", [])
            username = session.scalar(select(User.username).where(User.id == flow.user_id))
            label = flow.client_name
            # Exactly once: of two concurrent polls, only one deletes the row.
            gone = session.execute(delete(LoginFlow).where(LoginFlow.id == flow.id))
            if getattr(gone, "rowcount", 0) != 1:
                username = None
        if username is None:
            return _json(start_response, "404 Not Found", [])
        password = accounts.create_app_password(self.services.db, username, label=label)
        return _json(
            start_response,
            "200 OK",
            {"server": public_base(environ), "loginName": username, "appPassword": password},
        )

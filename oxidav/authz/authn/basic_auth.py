"""HTTP Basic authentication middleware: WsgiDAV's HTTPAuthenticator with strict header parsing.

WsgiDAV's own Basic handler raises (and answers 500) on a header that is not base64 or has no
colon; here such a header is a 400 with a logged reason. Everything else — the challenge, the
domain controller call, the environ keys — is WsgiDAV's.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Iterable
from typing import Any

from wsgidav.dav_error import HTTP_BAD_REQUEST, DAVError
from wsgidav.http_authenticator import HTTPAuthenticator

from oxidav.origin import client_address

log = logging.getLogger("oxidav.auth")


def parse_basic_credentials(header: str, user_required: bool = True) -> tuple[str, str]:
    """Split an ``Authorization: Basic …`` value into user name and password.

    Raises ``ValueError`` with a reason when the value is not valid Basic credentials (or,
    ``user_required``, carries an empty user name).
    """
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        raise ValueError("not Basic credentials")
    try:
        raw = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("credentials are not valid base64") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    user_name, sep, password = text.partition(":")
    if not sep or (user_required and not user_name):
        raise ValueError("credentials have no user name or no ':'")
    return user_name, password


class OxiHTTPAuthenticator(HTTPAuthenticator):  # type: ignore[misc]
    def handle_basic_auth_request(
        self, environ: dict[str, Any], start_response: Any
    ) -> Iterable[bytes]:
        realm = self.domain_controller.get_domain_realm(environ["PATH_INFO"], environ)
        try:
            user_name, password = parse_basic_credentials(environ["HTTP_AUTHORIZATION"])
        except ValueError as exc:
            log.warning("bad Authorization header from %s: %s", client_address(environ), exc)
            raise DAVError(HTTP_BAD_REQUEST, f"Malformed Authorization header: {exc}") from None
        if self.domain_controller.basic_auth_user(realm, user_name, password, environ):
            environ["wsgidav.auth.realm"] = realm
            environ["wsgidav.auth.user_name"] = user_name
            result: Iterable[bytes] = self.next_app(environ, start_response)
            return result
        challenge: Iterable[bytes] = self.send_basic_auth_response(environ, start_response)
        return challenge

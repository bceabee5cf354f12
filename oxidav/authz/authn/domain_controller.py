"""WsgiDAV domain controller backed by oxidav's users (Basic auth with passwords and app passwords).

Embedders can use it in a plain WsgiDAV config::

    "http_authenticator": {"domain_controller": OxiDomainController, "accept_digest": False,
                           "default_to_digest": False},
    "oxidav": {"authenticator": Authenticator(db, settings)},
"""

from __future__ import annotations

from typing import Any

from wsgidav import dav_error
from wsgidav.dav_error import DAVError
from wsgidav.dc.base_dc import BaseDomainController

from oxidav.authz.authn.authenticator import Authenticator
from oxidav.authz.authn.login_refusals import HTTP_TOO_MANY_REQUESTS, LoginRefused
from oxidav.environ import ENVIRON_PRINCIPAL
from oxidav.origin import client_address

REALM = "oxidav"

# WsgiDAV's status table lacks 429 (RFC 6585); it would send "429 Status".
dav_error.ERROR_DESCRIPTIONS.setdefault(HTTP_TOO_MANY_REQUESTS, "429 Too Many Requests")


class OxiDomainController(BaseDomainController):  # type: ignore[misc]
    def __init__(self, wsgidav_app: Any, config: dict[str, Any]) -> None:
        super().__init__(wsgidav_app, config)
        self.authenticator: Authenticator = config["oxidav"]["authenticator"]

    def __str__(self) -> str:
        return f"{self.__class__.__name__}()"

    def get_domain_realm(self, path_info: str, environ: dict[str, Any]) -> str:
        return REALM

    def require_authentication(self, realm: str, environ: dict[str, Any]) -> bool:
        return True

    def supports_http_digest_auth(self) -> bool:
        # Digest would need the password (or its MD5) in the clear; we only keep argon2 hashes.
        return False

    def basic_auth_user(
        self, realm: str, user_name: str, password: str, environ: dict[str, Any]
    ) -> bool:
        address = client_address(environ)
        try:
            principal = self.authenticator.authenticate(user_name, password, address)
        except LoginRefused as refused:
            raise DAVError(
                refused.status, refused.reason, add_headers=[refused.retry_after_header]
            ) from None
        if principal is None:
            return False
        environ[ENVIRON_PRINCIPAL] = principal
        return True

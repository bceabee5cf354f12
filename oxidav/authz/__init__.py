"""Authentication and authorization.

- ``Authenticator``: checks user name + password (argon2id passwords, app passwords) with the
  verified-credential cache and the failed-login throttle; every entry point uses it.
- ``OxiDomainController`` / ``OxiHTTPAuthenticator``: the WsgiDAV side of authentication.
- ``policy.decide`` and ``AuthzMiddleware``: who may touch which path; the only place where
  access decisions are made. To change the rules, change ``policy``.
- ``accounts``: users and app passwords (used by the CLI).
"""

from oxidav.authz.authenticator import Authenticator, TooManyFailedLogins
from oxidav.authz.credential_cache import Principal

__all__ = ["Authenticator", "Principal", "TooManyFailedLogins"]

"""Authentication and authorization: the only place where access decisions are made.

Authentication:

- ``Authenticator``: checks user name + password (argon2id passwords, app passwords) with the
  verified-credential cache and the failed-login throttle; every entry point uses it.
- ``OxiDomainController`` / ``OxiHTTPAuthenticator``: the WsgiDAV side of authentication.
- ``accounts``: users and app passwords (used by the CLI).

Authorization:

- ``policy.authorize`` and ``AuthzMiddleware``: who may touch which path. Own paths pass
  at once; another user's file tree is decided by the grant engine (one ``RequestAuthz`` per
  request); other users' calendars, address books, uploads and trashbin answer 404.
- ``GrantEngine`` (``engine``): grants with folder cascade. ``check(principal, action,
  resource)`` and the batched ``filter(...)`` answer with a ``Decision`` (and the status to give:
  404 where a 403 would reveal that something exists); ``engine.request(principal)`` gives the
  per-request ``RequestAuthz`` that memoises folder decisions. ``roles`` holds the one table of
  which ``Role`` allows which ``Action``; ``http_actions`` which actions a WebDAV method asks.
- ``grants`` and ``groups``: recording grants and (nested) groups; ``cli``: the operator's
  ``oxidav group`` and ``oxidav share`` commands.

To change who may do what, change ``roles.ROLE_ACTIONS`` or the engine — never a handler.
"""

from oxidav.authz.authenticator import Authenticator, TooManyFailedLogins
from oxidav.authz.credential_cache import Principal
from oxidav.authz.decision import Decision
from oxidav.authz.engine import GrantEngine, RequestAuthz
from oxidav.authz.resources import Resource, ResourceKind
from oxidav.authz.roles import Action, Role

__all__ = [
    "Action",
    "Authenticator",
    "Decision",
    "GrantEngine",
    "Principal",
    "RequestAuthz",
    "Resource",
    "ResourceKind",
    "Role",
    "TooManyFailedLogins",
]

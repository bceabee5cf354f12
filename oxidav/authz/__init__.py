"""Authentication and authorization: the only place where access decisions are made.

Authentication:

- ``Authenticator``: checks user name + password (argon2id passwords, app passwords) with the
  verified-credential cache and the failed-login throttles (per user + address, per address);
  every entry point uses it. ``HashingGate`` caps the argon2 runs of the whole process (user
  and public-link passwords); ``login_refusals`` holds the 429s it answers instead of hashing.
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
  which permission bit (Nextcloud's: read, update, create, delete, share) allows which
  ``Action``, and the ``Role`` names of common sums; ``http_actions`` which actions a WebDAV
  method asks. A reshare is worth what its maker still holds (``reshares`` settles the rows).
- ``collections``: calendars and address books shared with a principal — which ones it
  reaches (one grant-set read per request) and what it may do with their objects; the CalDAV
  and CardDAV providers list them in the recipient's home and ask it before every write.
- ``writes`` (over ``policy.authorize_write``): where a file written outside the files
  provider lands and whether it may (Nextcloud bulk and chunked uploads into shares mounted
  in the uploader's tree).
- ``grants`` and ``groups``: recording grants and (nested) groups; ``cli``: the operator's
  ``oxidav group`` and ``oxidav share`` commands.

To change who may do what, change ``roles.ACTION_BITS`` or the engine — never a handler.
"""

from oxidav.authz.authn.authenticator import Authenticator, TooManyFailedLogins
from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants.decision import Decision
from oxidav.authz.grants.engine import GrantEngine, RequestAuthz
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.authz.grants.roles import Action, Permission, Role

__all__ = [
    "Action",
    "Authenticator",
    "Decision",
    "GrantEngine",
    "Permission",
    "Principal",
    "RequestAuthz",
    "Resource",
    "ResourceKind",
    "Role",
    "TooManyFailedLogins",
]

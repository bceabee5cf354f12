"""Authentication and authorization: the only place where access decisions are made.

- ``authn/``: who is asking. ``Authenticator`` checks a user name and password (argon2id
  passwords, app passwords) through the verified-credential cache, the failed-login throttles
  and the process-wide cap on argon2 runs; every login entry point uses it and gets one
  ``Principal``. ``OxiDomainController`` / ``OxiHTTPAuthenticator`` are its WsgiDAV side;
  ``accounts`` manages users and app passwords.
- ``grants/``: who may do what. ``GrantEngine.check`` / ``filter`` answer with a ``Decision``
  (404 where a 403 would reveal that something exists); ``roles.ACTION_BITS`` is the one table
  of which permission bit allows which ``Action``; shares appear in a recipient's tree as
  mounts, and shared calendars and address books in their homes (``collections``).
- ``links/``: public links — the token store, who may use a link, the link middleware of
  WebDAV and the ``/s/<token>`` pages.
- Here: ``policy.authorize`` and ``AuthzMiddleware`` (who may touch which path: own paths pass,
  another user's files go to the grant engine, other users' calendars, address books, uploads
  and trashbin answer 404), ``writes`` (files written outside the files provider: Nextcloud
  uploads into mounted shares), ``lock_holders`` (who may remove a lock), ``http_actions`` (the
  actions a WebDAV method asks), the operator's commands.

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

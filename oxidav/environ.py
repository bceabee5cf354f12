"""Every key oxidav leaves in a request's WSGI environ, in one place, with typed accessors.

A layer that hands something to a later one (the front to the guards, authentication to
authorization, authorization to the providers, a provider to the Nextcloud layer) does it
through one of these keys and nothing else; the comment says who sets it and what it holds.
Values are per request: nothing here outlives the environ it was put in. This module imports
no room of oxidav at run time (the types below are for the type checker only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oxidav.authz.authn.principal import Principal
    from oxidav.tree.types import NodeInfo

#: What the accessors read: a WSGI environ or any read-only view of one.
Environ = Mapping[str, Any]

# -- the front and the guards -------------------------------------------------------------------
#: The client's address (``str``), after trusted proxies' headers (``oxidav.origin``).
ENVIRON_CLIENT_ADDRESS = "oxidav.client_address"
#: The public ``scheme://host[:port]`` the client used (``str``; ``oxidav.origin``).
ENVIRON_PUBLIC_BASE = "oxidav.public_base"
#: The ``base_path`` prefix taken off the request path (``str``; ``oxidav.base_path``).
ENVIRON_BASE_PATH = "oxidav.base_path"
#: The request id (``str``), also sent as ``X-Request-ID`` (``oxidav.response_guard``).
ENVIRON_REQUEST_ID = "oxidav.request_id"
#: Set by whoever answered a 5xx with a body that tells nothing but the status and the request
#: id (``oxidav.error_pages``); the response guard replaces any other 5xx body.
ENVIRON_CLEAN_ERROR_BODY = "oxidav.clean_error_body"
#: Set when the server takes ``FileRegion`` body pieces (``oxidav.http_connection``).
ENVIRON_SENDS_FILE_REGIONS = "oxidav.sends_file_regions"

# -- authentication and authorization -----------------------------------------------------------
#: The authenticated ``Principal`` (``oxidav.authz.authn``).
ENVIRON_PRINCIPAL = "oxidav.principal"
#: Who holds the locks a request takes when it is not the authenticated user (a public link's
#: principal, ``str``); the files provider makes it WsgiDAV's ``user_name``.
ENVIRON_LOCK_HOLDER = "oxidav.lock_holder"
#: The grant engine's per-request context, ``RequestAuthz`` (``oxidav.authz.middleware``).
ENVIRON_AUTHZ = "oxidav.authz"
#: The user whose tree a request acts in when it is not the caller's (``str``).
ENVIRON_ACTING_FOR = "oxidav.authz.acting_for"
#: The caller's ``MountTable`` (shares shown in their tree; ``oxidav.authz.grants.mounts``).
ENVIRON_MOUNTS = "oxidav.authz.mounts"
#: The ``TreeView`` a path below a mount point or a public link is served through.
ENVIRON_VIEWS = "oxidav.authz.views"
#: A request's ``CollectionAccess`` (WsgiDAV resolves a path several times).
ENVIRON_COLLECTIONS = "oxidav.authz.collections"
#: An opened ``LiveLink`` handed over by a trusted caller (the ``/s/`` pages), never a client.
ENVIRON_LINK = "oxidav.links.opened"

# -- the DAV core and the providers -------------------------------------------------------------
#: The request body read by ``oxidav.providers.dav.xml_input`` (``bytes`` or None) and its
#: parsed root (once parsed).
ENVIRON_BODY = "oxidav.xml.body"
ENVIRON_ROOT = "oxidav.xml.root"
#: The REPORTs and SEARCH handler of the application serving this request (``DavExtensions``).
ENVIRON_DAV_EXTENSIONS = "oxidav.dav.extensions"
#: The PROPFIND enrichers plugged into this request (``oxidav.providers.dav.enrichment``).
ENVIRON_ENRICHERS = "oxidav.enrichers"
#: The recipient's own property values, per collection kind (``dav.share_overrides``).
ENVIRON_OVERRIDES = "oxidav.share_overrides"
#: Per-request caches of the files provider, the calendar and the address-book providers.
ENVIRON_CACHE = "oxidav.files.cache"
ENVIRON_CALENDARS = "oxidav.calendars.calendars"
ENVIRON_BOOKS = "oxidav.contacts.books"
#: The node (``NodeInfo``) a PUT/MKCOL/COPY/MOVE produced or a GET/HEAD served — by the files
#: provider or a Nextcloud upload's assembly — for the layers that add OC-* headers.
ENVIRON_NODE = "oxidav.node"
#: Set by COPY/MOVE when the destination did not exist (201 instead of 204).
ENVIRON_CREATED = "oxidav.files.created"
#: PROPPATCH changes collected for one transaction: ``[(node id, name, value or None)]``.
ENVIRON_PROPPATCH = "oxidav.files.proppatch"

# -- the Nextcloud layer ------------------------------------------------------------------------
#: The Nextcloud enrichment state of a PROPFIND (``oxidav.nextcloud.enrichers``).
ENVIRON_ENRICHMENT_STATE = "oxidav.nextcloud.enrichment"


def principal_of(environ: Environ) -> Principal | None:
    """The authenticated principal of this request, if any."""
    found: Principal | None = environ.get(ENVIRON_PRINCIPAL)
    return found


def username_of(environ: Environ) -> str | None:
    """The authenticated user's name, if any."""
    found = principal_of(environ)
    return found.username if found is not None else None


def node_of(environ: Environ) -> NodeInfo | None:
    """The node this request produced or served, if a provider left one."""
    found: NodeInfo | None = environ.get(ENVIRON_NODE)
    return found


def request_id_of(environ: Environ) -> str:
    """This request's id ("" before the response guard gave it one)."""
    return str(environ.get(ENVIRON_REQUEST_ID, ""))


def base_path_of(environ: Environ) -> str:
    """The ``base_path`` prefix taken off this request's path (``""``: none)."""
    return str(environ.get(ENVIRON_BASE_PATH, ""))

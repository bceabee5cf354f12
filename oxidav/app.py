"""``make_app(settings)``: the oxidav WSGI application.

The request path of DESIGN §3, outermost first::

    ProxyHeaders                    client address and public URL base, through trusted proxies
                                    only (oxidav.origin)
    AccessLog                       one line per request (with the request id), and the
                                    request metrics (oxidav.observability)
    ResponseGuard                   request id (X-Request-ID), 5xx bodies: status + request id,
                                    uncaught exceptions logged, every answer framed correctly
    RejectBadPaths                  a path that is not UTF-8 or climbs above "/": 400;
                                    dot segments resolved
    Router                          /healthz, /readyz, /metrics (oxidav.observability),
                                    /.well-known/*, (Nextcloud) /status.php, /ocs/*,
                                    public links: /s/<token>, /public.php/webdav and
                                    /public.php/dav/files/<token> (their own WsgiDAVApps:
                                    OxiErrorPages, PublicLinkMiddleware, resolver)
    WsgiDAVApp                      resolves the provider by path, then its middleware stack:
      OxiErrorPages                 DAVError / exception -> HTTP response, no details leaked
      OxiHTTPAuthenticator          Basic auth via OxiDomainController (cache, throttle)
      AuthzMiddleware               may this principal touch this path / Destination?
      NextcloudMiddleware           OC-* headers, enrichment, uploads/bulk
      OxiRequestResolver            must be last: WsgiDAV's methods + REPORT & co.;
                                    XML bodies read and checked first (XmlInput)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wsgidav.wsgidav_app import WsgiDAVApp

from oxidav import urls
from oxidav.access_log import AccessLog
from oxidav.authz.authn.basic_auth import OxiHTTPAuthenticator
from oxidav.authz.authn.domain_controller import OxiDomainController
from oxidav.authz.links.access import LinkGate
from oxidav.authz.links.middleware import TOKEN_IN_PATH, PublicLinkMiddleware
from oxidav.authz.links.pages import PublicLinkPages
from oxidav.authz.lock_holders import LockHolders
from oxidav.authz.middleware import AuthzMiddleware
from oxidav.error_pages import OxiErrorPages
from oxidav.nextcloud.context import nextcloud_context
from oxidav.nextcloud.endpoints import nextcloud_routes
from oxidav.nextcloud.enrichers import register_share_types
from oxidav.nextcloud.link_share_types import link_share_types
from oxidav.nextcloud.middleware import NextcloudMiddleware
from oxidav.nextcloud.trashbin import TrashbinProvider
from oxidav.nextcloud.uploads.provider import UploadsProvider
from oxidav.observability.blob_metrics import InstrumentedBlobStore
from oxidav.observability.endpoints import observability_routes
from oxidav.observability.metrics import Metrics
from oxidav.observability.readiness import Readiness
from oxidav.origin import OriginPolicy, ProxyHeaders
from oxidav.providers.caldav.provider import CalendarsProvider
from oxidav.providers.carddav.provider import AddressbooksProvider
from oxidav.providers.dav.resolver import XML_INPUT, OxiRequestResolver
from oxidav.providers.dav.root import DavRootProvider
from oxidav.providers.dav.xml_input import XmlInput
from oxidav.providers.files.locks import DbLockStorage
from oxidav.providers.files.provider import FilesProvider
from oxidav.providers.principals import PrincipalsProvider
from oxidav.request_guard import RejectBadPaths
from oxidav.response_guard import ResponseGuard
from oxidav.routes import DISCOVERY_ROUTES, Router
from oxidav.services import Services
from oxidav.settings import Settings

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication


def _provider_mapping(settings: Settings, services: Services) -> dict[str, Any]:
    """Every DAV provider and the path it is mounted at (longest prefix wins)."""
    return {
        urls.DAV_ROOT: DavRootProvider(),
        "/": DavRootProvider(),  # discovery from the bare server URL (RFC 5397 on "/")
        urls.UPLOADS: UploadsProvider(nextcloud_context(services)),
        urls.TRASHBIN: TrashbinProvider(nextcloud_context(services)),
        urls.FILES: FilesProvider.from_settings(settings, services.db, services.blobs),
        urls.LEGACY_WEBDAV: FilesProvider.from_settings(
            settings, services.db, services.blobs, user_from="auth", canonical_share=urls.FILES
        ),
        urls.ADDRESSBOOKS: AddressbooksProvider(services.db, settings),
        urls.PRINCIPALS: PrincipalsProvider(services.db, settings),
        urls.CALENDARS: CalendarsProvider(services.db, settings),
    }


def _middleware_stack() -> list[Any]:
    return [
        OxiErrorPages,  # in place of WsgiDAV's ErrorPrinter, which shows the exception
        OxiHTTPAuthenticator,
        AuthzMiddleware,
        NextcloudMiddleware,
        OxiRequestResolver,  # must be last
    ]


def dav_config(settings: Settings, services: Services) -> dict[str, Any]:
    """The WsgiDAV configuration of oxidav's DAV surface."""
    return {
        "provider_mapping": _provider_mapping(settings, services),
        "middleware_stack": _middleware_stack(),
        "http_authenticator": {
            "domain_controller": OxiDomainController,
            "accept_basic": True,
            "accept_digest": False,
            "default_to_digest": False,
        },
        "oxidav": {"authenticator": services.authenticator, "services": services},
        "dir_browser": {"enable": False},
        "lock_storage": DbLockStorage(
            services.db,
            max_timeout=settings.lock_max_timeout,
            holders=LockHolders(services.db),
        ),
        XML_INPUT: XmlInput(max_body_bytes=settings.max_xml_body_bytes),
        "property_manager": None,
        "block_size": 256 * 1024,
        "verbose": 1,
        "logging": {"enable": False},
        "suppress_version_info": True,
        "add_header_MS_Author_Via": True,
    }


def public_dav_config(
    settings: Settings,
    services: Services,
    gate: LinkGate,
    share: str = urls.PUBLIC_WEBDAV,
) -> dict[str, Any]:
    """The WsgiDAV configuration of a public-link WebDAV endpoint (``share``: ``/public.php/
    webdav``, token in Basic credentials, or ``/public.php/dav/files``, token in the path):
    the same files provider, shown only through the link's ``TreeView``;
    ``PublicLinkMiddleware`` does authn and authz."""
    provider = FilesProvider.from_settings(
        settings, services.db, services.blobs, user_from="view", canonical_share=urls.FILES
    )
    return {
        **dav_config(settings, services),
        "provider_mapping": {share: provider},
        "middleware_stack": [OxiErrorPages, PublicLinkMiddleware, OxiRequestResolver],
        "oxidav": {
            "links": gate,
            "services": services,
            TOKEN_IN_PATH: share == urls.PUBLIC_DAV_FILES,
        },
    }


def public_link_routes(settings: Settings, services: Services) -> list[tuple[str, Any]]:
    """Router entries of public links: their two WebDAV endpoints and ``/s/<token>`` pages."""
    authenticator = services.authenticator
    gate = LinkGate(services.db, settings, authenticator.hashing, authenticator.address_budget)
    dav = WsgiDAVApp(public_dav_config(settings, services, gate))
    dav_files = WsgiDAVApp(public_dav_config(settings, services, gate, urls.PUBLIC_DAV_FILES))
    pages = PublicLinkPages(gate, dav, services.blobs)
    return [
        (urls.PUBLIC_WEBDAV, dav),
        (urls.PUBLIC_DAV_FILES, dav_files),
        (urls.PUBLIC_SHARE, pages),
    ]


def instrument(services: Services, metrics: Metrics) -> Readiness:
    """Count the blob store's calls and the database pool in ``metrics``; the readiness
    probes of both."""
    chain = services.blobs
    store = chain.store
    if isinstance(store, InstrumentedBlobStore):  # a second app on the same services
        store = store.inner
    chain.store = InstrumentedBlobStore(store, metrics)
    metrics.watch_pool(services.db.engine)
    return Readiness(services.db, chain.store)


def make_app(
    settings: Settings, services: Services | None = None, metrics: Metrics | None = None
) -> WSGIApplication:
    """Build the WSGI app. The database must already be migrated (``bootstrap.prepare``).
    ``metrics``: where the app counts (a fresh ``Metrics`` if None); the server adds its
    connection gauges to it (``Metrics.watch_server``)."""
    services = services or Services.open(settings)
    metrics = metrics or Metrics()
    readiness = instrument(services, metrics)
    register_share_types(link_share_types)  # oc:share-types 3 (idempotent)
    dav = WsgiDAVApp(dav_config(settings, services))
    routes = [
        *observability_routes(metrics, readiness, settings.metrics_allow),
        *DISCOVERY_ROUTES,
        *nextcloud_routes(services, lambda: readiness.report().ready),
        *public_link_routes(settings, services),
    ]
    return ProxyHeaders(
        AccessLog(ResponseGuard(RejectBadPaths(Router(routes, fallback=dav))), metrics),
        OriginPolicy.from_settings(settings),
    )

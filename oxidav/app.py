"""``make_app(settings)``: the oxidav WSGI application, and all of its wiring.

Everything an application is made of is listed here and handed down, nothing is registered at
import: the middleware stacks (``outer_stack``, ``DAV_STACK``, ``PUBLIC_DAV_STACK``, each in
request order), the DAV providers and their mount points, the REPORTs and SEARCH of the DAV
surface (``dav_extensions``), the routes. Two applications built in one process share nothing
but the ``Services`` they are given. The request path, outermost first::

    ProxyHeaders                    client address and public URL base, through trusted proxies
                                    only (oxidav.origin)
    AccessLog                       one line per request (with the request id), and the
                                    request metrics (oxidav.observability)
    ResponseGuard                   request id (X-Request-ID), 5xx bodies: status + request id,
                                    uncaught exceptions logged, every answer framed correctly
    RejectBadPaths                  a path that is not UTF-8 or climbs above "/": 400;
                                    dot segments resolved
    BasePath                        the base_path prefix taken off the path and Destination;
                                    outside it: 404 (oxidav.base_path)
    Router                          /healthz, /readyz, /metrics (oxidav.observability),
                                    /.well-known/*, (Nextcloud) /status.php, /ocs/*,
                                    public links: /s/<token>, /public.php/webdav and
                                    /public.php/dav/files/<token> (their own WsgiDAVApps:
                                    OxiErrorPages, PublicLinkMiddleware, resolver)
    MountedDavApp                   WsgiDAV's app: the provider by path, then its stack:
      OxiErrorPages                 DAVError / exception -> HTTP response, no details leaked
      OxiHTTPAuthenticator          Basic auth via OxiDomainController (cache, throttle)
      AuthzMiddleware               may this principal touch this path / Destination?
      NextcloudMiddleware           OC-* headers, enrichment, uploads/bulk
      OxiRequestResolver            must be last: WsgiDAV's methods + REPORT & co.;
                                    XML bodies read and checked first (XmlInput)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from oxidav import urls
from oxidav.access_log import AccessLog
from oxidav.authz.authn.basic_auth import OxiHTTPAuthenticator
from oxidav.authz.authn.domain_controller import OxiDomainController
from oxidav.authz.links.access import LinkGate
from oxidav.authz.links.middleware import TOKEN_IN_PATH, PublicLinkMiddleware
from oxidav.authz.links.pages import PublicLinkPages
from oxidav.authz.lock_holders import LockHolders
from oxidav.authz.middleware import AuthzMiddleware
from oxidav.base_path import BasePath, MountedDavApp, normalized
from oxidav.error_pages import OxiErrorPages
from oxidav.nextcloud import reports as nextcloud_reports
from oxidav.nextcloud.context import nextcloud_context
from oxidav.nextcloud.endpoints import nextcloud_routes
from oxidav.nextcloud.link_share_types import link_share_types
from oxidav.nextcloud.middleware import SHARE_TYPE_SOURCES, NextcloudMiddleware
from oxidav.nextcloud.search import FilesSearch
from oxidav.nextcloud.trashbin import TrashbinProvider
from oxidav.nextcloud.uploads.provider import UploadsProvider
from oxidav.observability.blob_metrics import InstrumentedBlobStore, instrumented
from oxidav.observability.endpoints import observability_routes
from oxidav.observability.metrics import Metrics
from oxidav.observability.readiness import Readiness
from oxidav.origin import OriginPolicy, ProxyHeaders
from oxidav.providers import caldav, carddav, principals
from oxidav.providers.dav.deferred import DeferredRoom, Loaded
from oxidav.providers.dav.request_server import DavExtensions
from oxidav.providers.dav.resolver import DAV_EXTENSIONS, XML_INPUT, OxiRequestResolver
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

#: WsgiDAV's middleware stack of the DAV surface, in request order (each wraps the next).
DAV_STACK: list[Any] = [
    OxiErrorPages,  # DAVError / exception -> answer, nothing leaked (not WsgiDAV's ErrorPrinter)
    OxiHTTPAuthenticator,  # Basic auth through OxiDomainController: cache, throttles
    AuthzMiddleware,  # may this principal touch this path (and Destination)?
    NextcloudMiddleware,  # OC-* headers, PROPFIND enrichment, bulk upload
    OxiRequestResolver,  # last: WsgiDAV's methods, REPORT and the others, XML bodies checked
]
#: The same for WebDAV through a public link: the link middleware authenticates and authorizes.
PUBLIC_DAV_STACK: list[Any] = [OxiErrorPages, PublicLinkMiddleware, OxiRequestResolver]

#: A layer of the outer stack: wraps the application below it.
Layer = Callable[["WSGIApplication"], "WSGIApplication"]


def outer_stack(settings: Settings, metrics: Metrics) -> list[Layer]:
    """The layers in front of the router, in request order (the module docstring says what
    each does)."""
    origin = OriginPolicy.from_settings(settings)
    return [
        lambda app: ProxyHeaders(app, origin),
        lambda app: AccessLog(app, metrics),
        ResponseGuard,
        RejectBadPaths,
        lambda app: BasePath(app, settings.base_path),
    ]


def wrap(stack: Sequence[Layer], innermost: WSGIApplication) -> WSGIApplication:
    """``innermost`` behind every layer of ``stack``, the first layer outermost."""
    app = innermost
    for layer in reversed(stack):
        app = layer(app)
    return app


def calendars_room(settings: Settings, services: Services) -> DeferredRoom:
    """CalDAV, imported by its first request (``oxidav.providers.dav.deferred``)."""

    def load() -> Loaded:
        from oxidav.providers.caldav.provider import CalendarsProvider
        from oxidav.providers.caldav.reports import REPORTS

        return CalendarsProvider(services.db, settings), REPORTS

    return DeferredRoom(load, caldav.REPORT_NAMES)


def addressbooks_room(settings: Settings, services: Services) -> DeferredRoom:
    """CardDAV, imported by its first request (``oxidav.providers.dav.deferred``)."""

    def load() -> Loaded:
        from oxidav.providers.carddav.provider import AddressbooksProvider
        from oxidav.providers.carddav.reports import REPORTS

        return AddressbooksProvider(services.db, settings), REPORTS

    return DeferredRoom(load, carddav.REPORT_NAMES)


def dav_extensions(calendars: DeferredRoom, addressbooks: DeferredRoom) -> DavExtensions:
    """The REPORTs and the SEARCH handler of oxidav's DAV surface."""
    return DavExtensions(
        reports=[
            *calendars.reports(),
            *addressbooks.reports(),
            *principals.REPORTS,
            *nextcloud_reports.REPORTS,
        ],
        search=FilesSearch(),
    )


def _provider_mapping(
    settings: Settings, services: Services, calendars: DeferredRoom, addressbooks: DeferredRoom
) -> dict[str, Any]:
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
        urls.ADDRESSBOOKS: addressbooks.provider(),
        urls.PRINCIPALS: PrincipalsProvider(services.db, settings, principals.HOME_PROPERTIES),
        urls.CALENDARS: calendars.provider(),
    }


def dav_config(settings: Settings, services: Services) -> dict[str, Any]:
    """The WsgiDAV configuration of oxidav's DAV surface."""
    calendars = calendars_room(settings, services)
    addressbooks = addressbooks_room(settings, services)
    return {
        "provider_mapping": _provider_mapping(settings, services, calendars, addressbooks),
        "middleware_stack": DAV_STACK,
        "http_authenticator": {
            "domain_controller": OxiDomainController,
            "accept_basic": True,
            "accept_digest": False,
            "default_to_digest": False,
        },
        "oxidav": {
            "authenticator": services.authenticator,
            "services": services,
            SHARE_TYPE_SOURCES: [link_share_types],  # oc:share-types 3
        },
        "dir_browser": {"enable": False},
        "mount_path": normalized(settings.base_path) or None,  # hrefs start with base_path
        "lock_storage": DbLockStorage(
            services.db,
            max_timeout=settings.lock_max_timeout,
            holders=LockHolders(services.db),
        ),
        XML_INPUT: XmlInput(max_body_bytes=settings.max_xml_body_bytes),
        DAV_EXTENSIONS: dav_extensions(calendars, addressbooks),
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
        "middleware_stack": PUBLIC_DAV_STACK,
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
    dav = MountedDavApp(public_dav_config(settings, services, gate))
    dav_files = MountedDavApp(public_dav_config(settings, services, gate, urls.PUBLIC_DAV_FILES))
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
    chain.store = instrumented(store, metrics)
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
    dav = MountedDavApp(dav_config(settings, services))
    routes = [
        *observability_routes(metrics, readiness, settings.metrics_allow),
        *DISCOVERY_ROUTES,
        *nextcloud_routes(services, lambda: readiness.report().ready),
        *public_link_routes(settings, services),
    ]
    return wrap(outer_stack(settings, metrics), Router(routes, fallback=dav))

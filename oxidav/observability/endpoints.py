"""``/healthz``, ``/readyz`` and ``/metrics``: routes answered before authentication.

- ``/healthz`` (liveness): 200 ``ok`` as long as the process answers HTTP; no I/O.
- ``/readyz`` (readiness): 200 when the database and the blob store answer, else 503; the
  JSON body names each part's state (``ok``, ``failed``, ``timeout``), never an error text.
  The probes are shared and rate-limited (``oxidav.observability.readiness``).
- ``/metrics``: the Prometheus text exposition of the app's registry, to clients whose address
  is in ``metrics_allow`` (default: loopback) and whose request did not come through a proxy
  (it carries no ``Forwarded``, ``X-Forwarded-For`` or ``X-Real-IP`` header); anyone else gets
  404, as for a path that does not exist.

Only GET and HEAD are answered (405 otherwise); none of them reads a request body.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from oxidav.environ import ENVIRON_CLEAN_ERROR_BODY
from oxidav.observability.metrics import Metrics
from oxidav.observability.readiness import Readiness

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

HEALTHZ = "/healthz"
READYZ = "/readyz"
METRICS = "/metrics"
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_PROXY_HEADERS = ("HTTP_FORWARDED", "HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP")
_NO_CACHE = ("Cache-Control", "no-store")
#: The Prometheus text format that ``Metrics.exposition`` writes.
CONTENT_TYPE_PLAIN_0_0_4 = "text/plain; version=0.0.4; charset=utf-8"


def parse_networks(values: Sequence[str]) -> tuple[Network, ...]:
    """``values`` (addresses or CIDRs) as networks. Raises ``ValueError`` naming a bad one."""
    networks: list[Network] = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{value!r} is not an IP address or CIDR") from None
    return tuple(networks)


def _answer(
    start_response: StartResponse, status: str, body: bytes, content_type: str
) -> Iterable[bytes]:
    start_response(
        status,
        [("Content-Type", content_type), ("Content-Length", str(len(body))), _NO_CACHE],
    )
    return [body]


def _method_refused(environ: WSGIEnvironment, start_response: StartResponse) -> bool:
    if environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
        return False
    start_response(
        "405 Method Not Allowed",
        [("Allow", "GET, HEAD"), ("Content-Length", "0"), _NO_CACHE],
    )
    return True


def healthz(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    if _method_refused(environ, start_response):
        return [b""]
    return _answer(start_response, "200 OK", b"ok\n", "text/plain; charset=utf-8")


class ReadyzApp:
    def __init__(self, readiness: Readiness) -> None:
        self.readiness = readiness

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if _method_refused(environ, start_response):
            return [b""]
        report = self.readiness.report()
        body = json.dumps(
            {"status": "ready" if report.ready else "not ready", "checks": dict(report.parts)}
        ).encode()
        status = "200 OK" if report.ready else "503 Service Unavailable"
        environ[ENVIRON_CLEAN_ERROR_BODY] = True  # the states only, nothing the guard must hide
        return _answer(start_response, status, body + b"\n", "application/json")


class MetricsApp:
    def __init__(self, metrics: Metrics, allowed: Sequence[Network]) -> None:
        self.metrics = metrics
        self.allowed = tuple(allowed)

    def allows(self, environ: WSGIEnvironment) -> bool:
        if any(environ.get(name) for name in _PROXY_HEADERS):
            return False
        try:
            address = ipaddress.ip_address(str(environ.get("REMOTE_ADDR") or ""))
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.allowed)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if not self.allows(environ):
            return _answer(start_response, "404 Not Found", b"", "text/plain")
        if _method_refused(environ, start_response):
            return [b""]
        return _answer(
            start_response, "200 OK", self.metrics.exposition(), CONTENT_TYPE_PLAIN_0_0_4
        )


def observability_routes(
    metrics: Metrics, readiness: Readiness, metrics_allow: Sequence[str]
) -> list[tuple[str, WSGIApplication]]:
    """Router entries of the three endpoints."""
    return [
        (HEALTHZ, healthz),
        (READYZ, ReadyzApp(readiness)),
        (METRICS, MetricsApp(metrics, parse_networks(metrics_allow))),
    ]


__all__ = [
    "HEALTHZ",
    "METRICS",
    "READYZ",
    "MetricsApp",
    "ReadyzApp",
    "healthz",
    "observability_routes",
    "parse_networks",
]

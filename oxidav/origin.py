"""Who sent a request and which public URL it reached, decided once per request.

``ProxyHeaders``, the outermost layer of the app, puts both in the environ; everything else
reads them through ``client_address(environ)`` (the access log, the login throttle and
address budget, refusal and denial lines) and ``public_base(environ)`` (every absolute URL
oxidav generates: login flow v2, link-share ``url``\\ s, the link pages' ``Secure`` cookie).

Trust, as ``OriginPolicy`` decides it:

- ``X-Forwarded-For``, ``-Proto``, ``-Host`` and ``Forwarded`` (RFC 7239; it wins when both
  are sent) are read only when the peer (``REMOTE_ADDR``) is in ``trusted_proxies``; from
  anyone else they are ignored. The client is the right-most address of the forwarded chain
  that is not itself a trusted proxy (a client can prepend anything, it cannot remove what
  the proxies appended). Of ``-Proto`` / ``-Host`` the last value counts (set by the proxy
  next to us).
- A generated URL never takes a ``Host`` (or a forwarded host) at its word: ``public_url``,
  when set, is every generated URL's base. Otherwise the request's host is used if it is in
  ``trusted_hosts`` (a name, or name:port), or, while that list is empty, if it is a loopback
  name or the address oxidav listens on; any other host gets the canonical base instead: the
  first trusted host, else the listening address.

Invariants: the values are computed from the request head only (no I/O) and never raise: a
malformed forwarded header is ignored as if absent.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from oxidav.environ import ENVIRON_CLIENT_ADDRESS, ENVIRON_PUBLIC_BASE

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from oxidav.settings import Settings

log = logging.getLogger("oxidav.origin")


IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_HOSTS = ("", "0.0.0.0", "::")
#: Hosts already warned about (bounded, so a scan of Host values cannot grow it).
_WARNED_MAX = 64


def parse_networks(entries: Iterable[str]) -> tuple[IPNetwork, ...]:
    """``entries`` (addresses or CIDRs) as networks; ValueError names the bad one."""
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or CIDR network") from None
    return tuple(networks)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip()
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _forwarded_node(value: str) -> str:
    """The address of an RFC 7239 ``for=`` node (``"[2001:db8::1]:80"``, ``1.2.3.4:5``), or
    the node as given (``unknown``, ``_hidden``)."""
    value = value.strip().strip('"')
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


def _forwarded(header: str) -> tuple[list[str], list[str], list[str]]:
    """``for``, ``proto`` and ``host`` values of a ``Forwarded`` header, in order."""
    fors: list[str] = []
    protos: list[str] = []
    hosts: list[str] = []
    for element in header.split(","):
        for pair in element.split(";"):
            name, eq, value = pair.partition("=")
            if not eq:
                continue
            name = name.strip().lower()
            value = value.strip().strip('"')
            if name == "for":
                fors.append(_forwarded_node(value))
            elif name == "proto":
                protos.append(value.lower())
            elif name == "host":
                hosts.append(value)
    return fors, protos, hosts


def _csv(header: str) -> list[str]:
    return [part.strip() for part in header.split(",") if part.strip()]


def _valid_host(host: str) -> bool:
    """A host[:port] as it may appear in a URL: no user info, path, spaces or controls."""
    if not host or len(host) > 255:
        return False
    return all(c.isalnum() or c in "-._:[]" for c in host) and host.isascii()


def _host_name(host: str) -> str:
    """``host`` without its port, lower case (``[::1]:8080`` -> ``::1``)."""
    host = host.lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


@dataclass(frozen=True)
class Origin:
    client_address: str
    public_base: str  # scheme://host[:port] and base_path, no trailing slash


@dataclass(frozen=True)
class OriginPolicy:
    """What to believe about a request's origin (see the module docstring)."""

    trusted_proxies: tuple[IPNetwork, ...] = ()
    public_url: str = ""
    trusted_hosts: tuple[str, ...] = ()
    listen_host: str = "127.0.0.1"
    #: The ``base_path`` setting (``/cloud`` or ``""``), the path every public URL starts with.
    base_path: str = ""

    @classmethod
    def from_settings(cls, settings: Settings) -> OriginPolicy:
        return cls(
            trusted_proxies=parse_networks(settings.trusted_proxies),
            public_url=settings.public_url.rstrip("/"),
            trusted_hosts=tuple(h.lower() for h in settings.trusted_hosts),
            listen_host=settings.host,
            base_path=settings.base_path.rstrip("/"),
        )

    def _trusted_proxy(self, address: str) -> bool:
        parsed = _address(address)
        return parsed is not None and any(parsed in net for net in self.trusted_proxies)

    def _client(self, peer: str, chain: Sequence[str]) -> str:
        """The right-most address of ``chain`` + ``peer`` that is not a trusted proxy."""
        for node in reversed(chain):
            if not self._trusted_proxy(node):
                parsed = _address(node)
                # ``unknown`` / obfuscated nodes name no address: the proxy before it counts.
                return str(parsed) if parsed is not None else peer
            peer = node
        return peer

    def _host_trusted(self, host: str) -> bool:
        name = _host_name(host)
        if self.trusted_hosts:
            return host.lower() in self.trusted_hosts or name in self.trusted_hosts
        listen = _host_name(self.listen_host)
        return name in LOOPBACK_NAMES or (listen not in WILDCARD_HOSTS and name == listen)

    def _canonical(self, scheme: str, port: str) -> str:
        if self.trusted_hosts:
            return f"{scheme}://{self.trusted_hosts[0]}"
        listen = self.listen_host if self.listen_host not in WILDCARD_HOSTS else "localhost"
        if ":" in listen:
            listen = f"[{listen}]"
        default = (scheme == "https" and port == "443") or (scheme == "http" and port == "80")
        return f"{scheme}://{listen}" if default or not port else f"{scheme}://{listen}:{port}"

    def resolve(self, environ: WSGIEnvironment) -> Origin:
        origin = self._resolve(environ)
        if not self.base_path:
            return origin
        return Origin(origin.client_address, origin.public_base + self.base_path)

    def _resolve(self, environ: WSGIEnvironment) -> Origin:
        peer = str(environ.get("REMOTE_ADDR") or "")
        scheme = "https" if environ.get("wsgi.url_scheme") == "https" else "http"
        host = str(environ.get("HTTP_HOST") or "")
        client = peer
        if self.trusted_proxies and self._trusted_proxy(peer):
            forwarded = environ.get("HTTP_FORWARDED")
            if forwarded:
                fors, protos, hosts = _forwarded(str(forwarded))
            else:
                fors = _csv(str(environ.get("HTTP_X_FORWARDED_FOR", "")))
                protos = [p.lower() for p in _csv(str(environ.get("HTTP_X_FORWARDED_PROTO", "")))]
                hosts = _csv(str(environ.get("HTTP_X_FORWARDED_HOST", "")))
            client = self._client(peer, fors)
            if protos and protos[-1] in ("http", "https"):
                scheme = protos[-1]
            if hosts and _valid_host(hosts[-1]):
                host = hosts[-1]
        if self.public_url:
            return Origin(client, self.public_url)
        if _valid_host(host) and self._host_trusted(host):
            return Origin(client, f"{scheme}://{host}")
        canonical = self._canonical(scheme, str(environ.get("SERVER_PORT", "")))
        _warn_untrusted(host, canonical)
        return Origin(client, canonical)


_warned: set[str] = set()


def _warn_untrusted(host: str, canonical: str) -> None:
    if not host or host in _warned or len(_warned) >= _WARNED_MAX:
        return
    _warned.add(host)
    log.warning(
        "Host %r is not in trusted_hosts: generated URLs use %s (set trusted_hosts or public_url)",
        host[:100],
        canonical,
    )


DEFAULT_POLICY = OriginPolicy()


def client_address(environ: WSGIEnvironment) -> str:
    """The client's address: through trusted proxies, else the peer's."""
    address = environ.get(ENVIRON_CLIENT_ADDRESS)
    return str(address) if address is not None else str(environ.get("REMOTE_ADDR") or "")


def public_base(environ: WSGIEnvironment) -> str:
    """``scheme://host[:port]`` and the ``base_path`` that generated URLs start with (no
    trailing slash): what an oxidav path (``/index.php/…``) is appended to."""
    base = environ.get(ENVIRON_PUBLIC_BASE)
    return str(base) if base is not None else DEFAULT_POLICY.resolve(environ).public_base


class ProxyHeaders:
    """Outermost app layer: resolves the request's ``Origin`` once (``client_address``,
    ``public_base``)."""

    def __init__(self, app: WSGIApplication, policy: OriginPolicy) -> None:
        self.app = app
        self.policy = policy

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        origin = self.policy.resolve(environ)
        environ[ENVIRON_CLIENT_ADDRESS] = origin.client_address
        environ[ENVIRON_PUBLIC_BASE] = origin.public_base
        return self.app(environ, start_response)


def public_url_problem(value: str) -> str | None:
    """Why ``value`` cannot be the ``public_url`` setting (None: it can)."""
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not _valid_host(parts.netloc):
        return "must be http(s)://host[:port]"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return "must be http(s)://host[:port] without a path (a path prefix is base_path)"
    return None


__all__ = [
    "ENVIRON_CLIENT_ADDRESS",
    "ENVIRON_PUBLIC_BASE",
    "Origin",
    "OriginPolicy",
    "ProxyHeaders",
    "client_address",
    "parse_networks",
    "public_base",
    "public_url_problem",
]

"""TLS for ``oxidav serve``: the ``tls_cert`` / ``tls_key`` settings as a cheroot SSL adapter.

``tls_adapter`` loads both files once, before the server binds, and turns every way they can
be wrong (missing, unreadable, not PEM, a key that is not the certificate's) into a
``SettingsError`` naming the setting, so the operator gets one line and exit code 2. The
handshake itself runs in the front (``oxidav.http_front``), not in cheroot's accept.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from cheroot.ssl.builtin import BuiltinSSLAdapter

from oxidav.settings import Settings, SettingsError


def _readable(key: str, value: str) -> str:
    path = Path(value).expanduser()
    try:
        with path.open("rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise SettingsError(
            f"invalid setting {key!r}: cannot read {path}: {exc.strerror or exc}"
        ) from None
    return str(path)


def tls_adapter(settings: Settings) -> BuiltinSSLAdapter | None:
    """The SSL adapter of ``settings`` (None without ``tls_cert``)."""
    if not settings.tls_cert:
        return None
    cert = _readable("tls_cert", settings.tls_cert)
    key = _readable("tls_key", settings.tls_key)
    try:
        ssl.create_default_context(cafile=cert)  # the certificate file alone parses
    except ssl.SSLError as exc:
        raise SettingsError(
            f"invalid setting 'tls_cert': {cert} is not a PEM certificate ({exc.reason})"
        ) from None
    try:
        return BuiltinSSLAdapter(cert, key)
    except ssl.SSLError as exc:
        raise SettingsError(
            f"invalid setting 'tls_key': {key} is not the PEM private key of {cert} ({exc.reason})"
        ) from None


__all__ = ["tls_adapter"]

"""Helpers of the files-provider tests: URLs, PROPFIND parsing, raw-socket requests."""

from __future__ import annotations

import base64
import socket
from urllib.parse import quote

from lxml import etree

FILES = "/remote.php/dav/files/alice"
DAV = "{DAV:}"
AUTH = "Basic " + base64.b64encode(b"alice:secret").decode()


def url(path: str) -> str:
    """The files URL of ``path`` (a decoded path below alice's root), percent-encoded."""
    return FILES + quote(path)


def propfind_props(body: bytes) -> dict[str, dict[str, str]]:
    """``{href: {prop tag: text}}`` of the 200 propstats of a multistatus body."""
    tree = etree.fromstring(body)
    result: dict[str, dict[str, str]] = {}
    for response in tree.iter(f"{DAV}response"):
        href = response.findtext(f"{DAV}href") or ""
        props: dict[str, str] = {}
        for propstat in response.iter(f"{DAV}propstat"):
            if "200" not in (propstat.findtext(f"{DAV}status") or ""):
                continue
            for prop in propstat.iter(f"{DAV}prop"):
                for child in prop:
                    props[child.tag] = (child.text or "") + "".join(
                        etree.tostring(c).decode() for c in child
                    )
        result[href] = props
    return result


def raw_request(port: int, head: str, body: bytes, *, half_close: bool = True) -> bytes:
    """Send ``head`` (request line and headers, no blank line) and ``body`` on a raw socket,
    half-close, and return whatever the server answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n\r\n" + body)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            try:
                data = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks)

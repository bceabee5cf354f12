"""Which Nextcloud desktop client sent a request, and whether it can do bulk upload.

Desktop clients name themselves in the User-Agent as ``... mirall/3.7.3git (nextcloudcmd, ...)``.
Clients before the fix of nextcloud/desktop#5871 (3.9 branch, July 2023) cannot send a bulk
batch that holds an empty file: the part's body device reports end of data with -1, so Qt
aborts the POST before sending a byte of the body (the server sees the request head, a
Content-Length, and then nothing) or, in a large batch, after its first 64 KiB; the whole
batch fails client-side ("Network error: 99"), and every later sync pass forms it again.
Nothing a server answers can repair that, so ``dav.bulkupload`` is advertised to desktop
clients only from ``nextcloud_bulk_min_desktop`` on; older ones PUT each file. Requests without
a ``mirall/`` token (other clients, scripts) get the capability unchanged.
"""

from __future__ import annotations

import re

_MIRALL = re.compile(r"\bmirall/(\d{1,4})\.(\d{1,4})(?:\.(\d{1,6}))?")
_VERSION = re.compile(r"^\d{1,4}(\.\d{1,6}){0,2}$")


def parse_version(text: str) -> tuple[int, int, int]:
    """``"3.10"`` → ``(3, 10, 0)``; ``ValueError`` unless one to three dotted integers."""
    if not _VERSION.match(text.strip()):
        raise ValueError(f"{text!r} is not a version like 3.10.0")
    parts = [int(piece) for piece in text.strip().split(".")]
    parts += [0] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


def desktop_version(user_agent: str) -> tuple[int, int, int] | None:
    """The desktop client version named in a User-Agent, or None for any other client."""
    match = _MIRALL.search(user_agent[:512])
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def offers_bulk(user_agent: str, enabled: bool, min_desktop: str) -> bool:
    """Whether to advertise ``dav.bulkupload`` to the client that sent ``user_agent``."""
    if not enabled:
        return False
    version = desktop_version(user_agent)
    return version is None or version >= parse_version(min_desktop)

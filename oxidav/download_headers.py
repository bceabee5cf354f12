"""Headers that keep a downloaded file from running as oxidav's origin.

Files are served from the origin where browsers replay a user's Basic credentials and, for
public links, to anyone. A stored ``.html`` or ``.svg`` opened inline would run its scripts as
that origin. So every file download carries ``X-Content-Type-Options: nosniff`` (the browser
keeps to the declared type), and a file whose type is not on ``SAFE_INLINE`` (images other than
SVG, audio, video, plain text, PDF and a few inert types) is sent as an attachment under
``Content-Security-Policy: sandbox; default-src 'none'`` — the combination Nextcloud uses for
its DAV downloads. WebDAV, CalDAV and CardDAV clients do not look at either header.
"""

from __future__ import annotations

from urllib.parse import quote

#: Types a browser may show inline: it renders them without running anything of theirs.
SAFE_INLINE = frozenset(
    {
        "text/plain",
        "text/csv",
        "application/pdf",
        "application/json",
        "application/octet-stream",
        "application/zip",
    }
)
#: Whole families that are inert, except the members in ``ACTIVE_IN_SAFE_FAMILY``.
SAFE_INLINE_FAMILIES = ("image/", "audio/", "video/")
ACTIVE_IN_SAFE_FAMILY = frozenset({"image/svg+xml"})
#: What an active file is served under: no scripts, no plugins, no loads, an opaque origin.
SANDBOX_POLICY = "sandbox; default-src 'none'"


def media_type(content_type: str) -> str:
    """``text/html`` of ``Text/HTML; charset=utf-8``."""
    return content_type.split(";", 1)[0].strip().lower()


def is_active(content_type: str) -> bool:
    """Whether a browser could run something of a file served as ``content_type``."""
    kind = media_type(content_type)
    if kind in SAFE_INLINE:
        return False
    return kind in ACTIVE_IN_SAFE_FAMILY or not kind.startswith(SAFE_INLINE_FAMILIES)


def attachment(name: str) -> str:
    """``Content-Disposition: attachment`` for a file called ``name`` (RFC 6266: an ASCII
    fallback and the UTF-8 ``filename*``)."""
    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def download_headers(content_type: str, name: str) -> list[tuple[str, str]]:
    """The headers a download of the file ``name`` served as ``content_type`` adds."""
    headers = [("X-Content-Type-Options", "nosniff")]
    if is_active(content_type):
        headers.append(("Content-Security-Policy", SANDBOX_POLICY))
        headers.append(("Content-Disposition", attachment(name)))
    return headers

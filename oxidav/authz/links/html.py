"""The small HTML pages of public links: a folder listing, the password form, messages.

Every name and value that reaches a page goes through ``html.escape`` (and hrefs through
``quote``), so a file called ``<script>…`` is shown, never run. Pages are sent with a strict
Content-Security-Policy (no scripts at all), no framing and no Referer (the token is in the URL).
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from urllib.parse import quote, urlencode

from oxidav.tree import NodeInfo

SECURITY_HEADERS = [
    (
        "Content-Security-Policy",
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    ),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
]
_STYLE = (
    "body{font-family:sans-serif;margin:2em auto;max-width:50em;padding:0 1em}"
    "td{padding:.2em 1em .2em 0}td.size{text-align:right;color:#555}"
)


def page(title: str, body: str) -> bytes:
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="robots" content="noindex, nofollow">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{body}</body></html>\n"
    ).encode()


def message(title: str, text: str) -> bytes:
    return page(title, f"<h1>{escape(title)}</h1><p>{escape(text)}</p>")


def password_form(action: str, error: str = "") -> bytes:
    problem = f'<p role="alert">{escape(error)}</p>' if error else ""
    return page(
        "Password required",
        "<h1>This share is password-protected</h1>"
        f"{problem}"
        f'<form method="post" action="{escape(action, quote=True)}">'
        '<label>Password <input type="password" name="password" autofocus required></label> '
        '<button type="submit">Continue</button></form>',
    )


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def listing(
    base: str, title: str, sub: str, children: Iterable[NodeInfo], truncated: bool
) -> bytes:
    """The folder ``sub`` (``""`` or ``"/a/b"`` below the link) of the link at ``base``."""
    rows = []
    if sub:
        parent = sub.rsplit("/", 1)[0]
        href = base + (("?" + urlencode({"path": parent})) if parent else "")
        rows.append(f'<tr><td><a href="{escape(href, quote=True)}">../</a></td><td></td></tr>')
    for node in children:
        rel = f"{sub}/{node.name}"
        if node.is_folder:
            href = f"{base}?{urlencode({'path': rel}, quote_via=quote)}"
            label, size = node.name + "/", ""
        else:
            href = f"{base}/download?{urlencode({'path': rel}, quote_via=quote)}"
            label, size = node.name, _size(node.size)
        rows.append(
            f'<tr><td><a href="{escape(href, quote=True)}">{escape(label)}</a></td>'
            f'<td class="size">{escape(size)}</td></tr>'
        )
    more = "<p>(Only the first entries are shown.)</p>" if truncated else ""
    heading = escape(title + (sub or ""))
    return page(title, f"<h1>{heading}</h1><table>{''.join(rows)}</table>{more}")

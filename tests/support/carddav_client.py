"""A small raw-HTTP CardDAV client for the tests: request bodies and multistatus parsing."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote

from lxml import etree

from tests.support.live import LiveServer, Response

C = "urn:ietf:params:xml:ns:carddav"
NS = {"D": "DAV:", "C": C, "CS": "http://calendarserver.org/ns/"}
XML = {"Content-Type": "application/xml; charset=utf-8"}
BOOKS = "/remote.php/dav/addressbooks/users"


@dataclass
class Item:
    """One DAV:response: its status (when bare) and its 200 properties."""

    href: str
    status: str | None = None
    props: dict[str, etree._Element] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def text(self, name: str) -> str:
        return self.props[name].text or ""


@dataclass
class Multistatus:
    items: dict[str, Item]
    sync_token: str | None
    root: etree._Element


def parse_multistatus(body: bytes) -> Multistatus:
    root = etree.fromstring(body)
    assert root.tag == "{DAV:}multistatus", body[:200]
    items: dict[str, Item] = {}
    for response in root.findall("D:response", NS):
        item = Item(href=response.findtext("D:href", namespaces=NS) or "")
        item.status = response.findtext("D:status", namespaces=NS)
        for propstat in response.findall("D:propstat", NS):
            ok = " 200 " in (propstat.findtext("D:status", namespaces=NS) or "")
            prop_el = propstat.find("D:prop", NS)
            for prop in prop_el if prop_el is not None else []:
                if ok:
                    item.props[prop.tag] = prop
                else:
                    item.missing.append(prop.tag)
        items[item.href] = item
    return Multistatus(items, root.findtext("D:sync-token", namespaces=NS), root)


def book_path(user: str, book: str = "contacts") -> str:
    return f"{BOOKS}/{user}/{book}/"


def card_path(user: str, name: str, book: str = "contacts") -> str:
    return book_path(user, book) + quote(name)


def prop_xml(*names: str, address_data: str = "") -> str:
    inner = "".join(f"<{name}/>" for name in names) + address_data
    return f"<D:prop>{inner}</D:prop>"


def propfind_body(*names: str) -> str:
    return (
        f'<?xml version="1.0"?><D:propfind xmlns:D="DAV:" xmlns:C="{C}" '
        f'xmlns:CS="http://calendarserver.org/ns/">{prop_xml(*names)}</D:propfind>'
    )


class CardDav:
    """Verb helpers over a ``LiveServer`` for one user."""

    def __init__(self, live: LiveServer, user: str = "alice") -> None:
        self.live = live
        self.user = user

    def request(
        self, method: str, path: str, body: str | bytes | None = None, **headers: str
    ) -> Response:
        return self.live.request(
            method,
            path,
            body,
            headers={k.replace("_", "-"): v for k, v in headers.items()},
            user=self.user,
        )

    def propfind(self, path: str, *names: str, depth: str = "0") -> Multistatus:
        response = self.request("PROPFIND", path, propfind_body(*names), Depth=depth, **XML)
        assert response.status == 207, (response.status, response.text)
        return parse_multistatus(response.body)

    def put(self, name: str, text: str, book: str = "contacts", **headers: str) -> Response:
        headers.setdefault("Content_Type", "text/vcard; charset=utf-8")
        return self.request("PUT", card_path(self.user, name, book), text, **headers)

    def report(self, path: str, body: str, depth: str = "1") -> Response:
        return self.request("REPORT", path, body, Depth=depth, **XML)

    def query(
        self, filter_xml: str, props: str = "", book: str = "contacts", limit: int | None = None
    ) -> Response:
        limit_xml = (
            f"<C:limit><C:nresults>{limit}</C:nresults></C:limit>" if limit is not None else ""
        )
        body = (
            f'<C:addressbook-query xmlns:D="DAV:" xmlns:C="{C}">'
            f"{props or prop_xml('D:getetag')}<C:filter {filter_xml}</C:filter>{limit_xml}"
            "</C:addressbook-query>"
        )
        return self.report(book_path(self.user, book), body)

    def multiget(self, hrefs: list[str], props: str = "", book: str = "contacts") -> Response:
        inner = "".join(f"<D:href>{href}</D:href>" for href in hrefs)
        body = (
            f'<C:addressbook-multiget xmlns:D="DAV:" xmlns:C="{C}">'
            f"{props or prop_xml('D:getetag', 'C:address-data')}{inner}</C:addressbook-multiget>"
        )
        return self.report(book_path(self.user, book), body)

    def sync(
        self, token: str | None, props: str = "", book: str = "contacts", limit: int | None = None
    ) -> Response:
        limit_xml = (
            f"<D:limit><D:nresults>{limit}</D:nresults></D:limit>" if limit is not None else ""
        )
        body = (
            f'<D:sync-collection xmlns:D="DAV:" xmlns:C="{C}">'
            f"<D:sync-token>{token or ''}</D:sync-token><D:sync-level>1</D:sync-level>"
            f"{limit_xml}{props or prop_xml('D:getetag')}</D:sync-collection>"
        )
        return self.report(book_path(self.user, book), body, depth="0")

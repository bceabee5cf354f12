"""Address-book sharing over real HTTP, and a shared calendar through python-caldav as bob.

alice's ``contacts`` book appears in bob's address-book home as ``contacts_shared_by_alice``;
a viewer queries and reads it, an editor's cards land in alice's book. python-caldav (a real
client) lists the shared calendar among bob's calendars, reads its events, and can save an
event into it only when the share is read-write.
"""

from __future__ import annotations

import caldav
import pytest
from caldav.lib import error as caldav_error

from oxidav.authz.grants.roles import Role
from tests.support.live import LiveServer
from tests.support.shared_collections import (
    ALICE_CAL,
    NS,
    SHARED_CAL,
    hrefs,
    ics,
    need_privilege,
    privileges,
    propfind,
    put,
    report,
    share,
    sync,
    unshare,
)

CARDDAV = "urn:ietf:params:xml:ns:carddav"
ALICE_BOOK = "/remote.php/dav/addressbooks/users/alice/contacts/"
BOB_BOOKS = "/remote.php/dav/addressbooks/users/bob/"
SHARED_BOOK = f"{BOB_BOOKS}contacts_shared_by_alice/"
VCARD = "text/vcard; charset=utf-8"


def vcard(uid: str, fn: str) -> str:
    return f"BEGIN:VCARD\r\nVERSION:3.0\r\nUID:{uid}\r\nFN:{fn}\r\nN:{fn};;;;\r\nEND:VCARD\r\n"


def query(fn: str) -> str:
    return (
        f'<C:addressbook-query xmlns:d="DAV:" xmlns:C="{CARDDAV}"><d:prop><d:getetag/>'
        '<C:address-data/></d:prop><C:filter><C:prop-filter name="FN">'
        f'<C:text-match collation="i;unicode-casemap" match-type="contains">{fn}</C:text-match>'
        "</C:prop-filter></C:filter></C:addressbook-query>"
    )


@pytest.fixture
def books(live_server: LiveServer) -> LiveServer:
    """alice's ``contacts`` book holds ``ann.vcf``; bob's home exists."""
    status = live_server.request(
        "PUT", ALICE_BOOK + "ann.vcf", vcard("ann", "Ann Arbor"), {"Content-Type": VCARD}
    ).status
    assert status == 201
    assert live_server.request("PROPFIND", BOB_BOOKS, None, {"Depth": "0"}, "bob").status == 207
    return live_server


def test_shared_address_book_viewer_then_editor(books: LiveServer) -> None:
    grant_id = share(books, "addressbooks/alice/contacts", Role.VIEWER)
    props = "<d:displayname/><d:current-user-privilege-set/><d:owner/><d:resourcetype/>"
    listing = propfind(books, BOB_BOOKS, props, depth="1")
    assert set(listing) == {BOB_BOOKS, f"{BOB_BOOKS}contacts/", SHARED_BOOK}
    assert privileges(listing[SHARED_BOOK]) == {"read", "read-current-user-privilege-set"}
    assert listing[SHARED_BOOK].findtext("d:owner/d:href", namespaces=NS) == (
        "/remote.php/dav/principals/users/alice/"
    )
    found = report(books, SHARED_BOOK, query("arbor"))
    assert hrefs(found) == {SHARED_BOOK + "ann.vcf"}
    assert "FN:Ann Arbor" in "".join(found.itertext())
    assert "Ann Arbor" in books.request("GET", SHARED_BOOK + "ann.vcf", user="bob").text
    assert hrefs(sync(books, SHARED_BOOK)) == {SHARED_BOOK + "ann.vcf"}
    refused = books.request(
        "PUT", SHARED_BOOK + "bo.vcf", vcard("bo", "Bo"), {"Content-Type": VCARD}, user="bob"
    )
    assert refused.status == 403
    assert need_privilege(refused.body) == (SHARED_BOOK, "bind")
    assert books.request("DELETE", SHARED_BOOK + "ann.vcf", user="bob").status == 403
    assert books.request("GET", ALICE_BOOK + "bo.vcf").status == 404
    assert books.request("MKCOL", SHARED_BOOK, user="bob").status == 405  # the name is taken

    share(books, "addressbooks/alice/contacts", Role.EDITOR)
    listing = propfind(books, BOB_BOOKS, props, depth="1")
    assert privileges(listing[SHARED_BOOK]) == {
        "read",
        "read-current-user-privilege-set",
        "write-content",
        "bind",
        "unbind",
    }
    created = books.request(
        "PUT", SHARED_BOOK + "bo.vcf", vcard("bo", "Bo"), {"Content-Type": VCARD}, user="bob"
    )
    assert created.status == 201
    assert "FN:Bo" in books.request("GET", ALICE_BOOK + "bo.vcf").text
    assert books.request("DELETE", SHARED_BOOK + "ann.vcf", user="bob").status == 204
    assert books.request("GET", ALICE_BOOK + "ann.vcf").status == 404

    unshare(books, grant_id)
    assert books.request("GET", SHARED_BOOK + "bo.vcf", user="bob").status == 404
    assert SHARED_BOOK not in propfind(books, BOB_BOOKS, "<d:displayname/>", depth="1")


@pytest.fixture
def bob_client(live_server: LiveServer):
    assert put(live_server, ALICE_CAL + "a.ics", ics("a")) == 201
    with caldav.DAVClient(live_server.base_url + "/", username="bob", password="secret") as c:
        yield c


def _shared_calendar(client: caldav.DAVClient) -> caldav.Calendar:
    calendars = {c.url.path: c for c in client.principal().calendars()}
    assert set(calendars) == {"/remote.php/dav/calendars/bob/personal/", SHARED_CAL}
    return calendars[SHARED_CAL]


def test_python_caldav_read_write_share(live_server: LiveServer, bob_client) -> None:
    share(live_server, "calendars/alice/personal", Role.EDITOR)
    calendar = _shared_calendar(bob_client)
    assert calendar.get_display_name() == "Personal"
    assert [str(e.icalendar_component["UID"]) for e in calendar.events()] == ["a"]
    calendar.save_event(ics("from-bob", "bob's meeting"))
    uids = {str(e.icalendar_component["UID"]) for e in calendar.events()}
    assert uids == {"a", "from-bob"}
    in_alice = propfind(live_server, ALICE_CAL, "<d:getetag/>", "1", user="alice")
    assert len(in_alice) == 3  # the calendar, a.ics and bob's event


def test_python_caldav_read_only_share(live_server: LiveServer, bob_client) -> None:
    share(live_server, "calendars/alice/personal", Role.VIEWER)
    calendar = _shared_calendar(bob_client)
    assert [str(e.icalendar_component["UID"]) for e in calendar.events()] == ["a"]
    with pytest.raises(caldav_error.DAVError):
        calendar.save_event(ics("from-bob"))
    assert len(propfind(live_server, ALICE_CAL, "<d:getetag/>", "1", user="alice")) == 2


def test_recipient_renames_a_shared_address_book_for_himself(books: LiveServer) -> None:
    share(books, "addressbooks/alice/contacts", Role.VIEWER)
    patch = books.request(
        "PROPPATCH",
        SHARED_BOOK,
        '<d:propertyupdate xmlns:d="DAV:"><d:set><d:prop><d:displayname>Alice people'
        "</d:displayname></d:prop></d:set></d:propertyupdate>",
        user="bob",
    )
    assert patch.status == 207 and "200" in patch.text and "403" not in patch.text
    mine = propfind(books, SHARED_BOOK, "<d:displayname/>")[SHARED_BOOK]
    assert mine.findtext("d:displayname", namespaces=NS) == "Alice people"
    hers = propfind(books, ALICE_BOOK, "<d:displayname/>", user="alice")[ALICE_BOOK]
    assert hers.findtext("d:displayname", namespaces=NS) != "Alice people"
    description = books.request(
        "PROPPATCH",
        SHARED_BOOK,
        f'<d:propertyupdate xmlns:d="DAV:" xmlns:C="{CARDDAV}"><d:set><d:prop>'
        "<C:addressbook-description>x</C:addressbook-description></d:prop></d:set>"
        "</d:propertyupdate>",
        user="bob",
    )
    assert description.status == 207 and "403" in description.text

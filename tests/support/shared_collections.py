"""Shared calendars for the tests: alice's calendar shared with bob, the requests both make
(PROPFIND, REPORT, PUT, PROPPATCH, sync) and readers of their answers."""

from __future__ import annotations

from lxml import etree

from oxidav.authz.grants import groups
from oxidav.authz.grants.roles import Role
from oxidav.authz.grants.store import Subject, grant, revoke
from oxidav.authz.grants.targets import resolve_target, user_id
from tests.support.live import LiveServer

DAV = "/remote.php/dav"


ALICE_CAL = f"{DAV}/calendars/alice/personal/"


BOB_HOME = f"{DAV}/calendars/bob/"


SHARED_CAL = f"{BOB_HOME}personal_shared_by_alice/"


NS = {"d": "DAV:", "c": "urn:ietf:params:xml:ns:caldav", "cs": "http://calendarserver.org/ns/"}


def ics(uid: str, summary: str = "meeting") -> str:
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\n"
        f"UID:{uid}\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20260105T100000Z\r\n"
        f"DURATION:PT1H\r\nSUMMARY:{summary}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )


def put(server: LiveServer, path: str, body: str, user: str = "alice", **headers: str) -> int:
    headers = {"Content-Type": "text/calendar; charset=utf-8", **headers}
    return server.request("PUT", path, body, headers, user=user).status


def propfind(
    server: LiveServer, path: str, props: str, depth: str = "0", user: str = "bob"
) -> dict[str, etree._Element]:
    """href -> the DAV:prop element of its 200 propstat (a 207 is asserted)."""
    body = (
        f'<d:propfind xmlns:d="DAV:" xmlns:c="{NS["c"]}" xmlns:cs="{NS["cs"]}">'
        f"<d:prop>{props}</d:prop></d:propfind>"
    )
    response = server.request("PROPFIND", path, body, {"Depth": depth}, user=user)
    assert response.status == 207, (path, response.status, response.text)
    found = {}
    for item in etree.fromstring(response.body).iterfind("d:response", NS):
        href = item.findtext("d:href", namespaces=NS)
        prop = next(
            (
                ps.find("d:prop", NS)
                for ps in item.iterfind("d:propstat", NS)
                if "200" in (ps.findtext("d:status", namespaces=NS) or "")
            ),
            None,
        )
        found[href] = prop if prop is not None else etree.Element("{DAV:}prop")
    return found


def privileges(prop: etree._Element) -> set[str]:
    return {
        etree.QName(p).localname
        for p in prop.iterfind("d:current-user-privilege-set/d:privilege/*", NS)
    }


def report(server: LiveServer, path: str, body: str, user: str = "bob") -> etree._Element:
    response = server.request("REPORT", path, body, {"Depth": "1"}, user=user)
    assert response.status == 207, (path, response.status, response.text)
    return etree.fromstring(response.body)


def hrefs(multistatus: etree._Element) -> set[str]:
    return {
        item.findtext("d:href", namespaces=NS) or ""
        for item in multistatus.iterfind("d:response", NS)
    }


def sync(server: LiveServer, path: str, token: str = "", user: str = "bob") -> etree._Element:
    body = (
        f'<d:sync-collection xmlns:d="DAV:"><d:sync-token>{token}</d:sync-token>'
        "<d:sync-level>1</d:sync-level><d:prop><d:getetag/></d:prop></d:sync-collection>"
    )
    return report(server, path, body, user)


def need_privilege(response_body: bytes) -> tuple[str, str]:
    """(href, privilege) of an RFC 3744 §7.1.1 need-privileges body."""
    error = etree.fromstring(response_body)
    resource = error.find("d:need-privileges/d:resource", NS)
    assert resource is not None, response_body
    privilege = resource.find("d:privilege/*", NS)
    assert privilege is not None
    return resource.findtext("d:href", namespaces=NS) or "", etree.QName(privilege).localname


def share(
    server: LiveServer, spec: str, role: Role, *, group: str | None = None, **kwargs: object
) -> int:
    """Grant ``role`` on ``spec`` to bob (or to ``group``, created with bob in it)."""
    assert server.services is not None
    with server.services.db.write() as session:
        resource = resolve_target(session, spec)
        bob = user_id(session, "bob")
        if group is None:
            subject = Subject.user(bob)
        else:
            gid = groups.create_group(session, group)
            groups.add_member(session, gid, user_id=bob)
            subject = Subject.group(gid)
        return grant(session, subject, resource, role, **kwargs)  # type: ignore[arg-type]


def unshare(server: LiveServer, grant_id: int) -> None:
    assert server.services is not None
    with server.services.db.write() as session:
        revoke(session, grant_id)


APPLE = "http://apple.com/ns/ical/"


def proppatch(server: LiveServer, path: str, inner: str, user: str = "bob") -> str:
    body = (
        f'<d:propertyupdate xmlns:d="DAV:" xmlns:a="{APPLE}" xmlns:c="{NS["c"]}">'
        f"{inner}</d:propertyupdate>"
    )
    response = server.request("PROPPATCH", path, body, user=user)
    assert response.status == 207, response.text
    return response.text

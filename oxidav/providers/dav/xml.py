"""DAV property names and the small XML builders shared by CalDAV, CardDAV and principals.

Names are Clark notation (``{namespace}local``). The builders make the property elements
WsgiDAV puts into a multistatus as they are: ``href_element`` (RFC 4918 §14.7 hrefs),
``privilege_set`` (RFC 3744 §5.4), ``resourcetype`` (RFC 4918 §15.9) and
``supported_report_set`` (RFC 3253 §3.1.5), which is computed from the REPORT registry.
"""

from __future__ import annotations

from typing import Any

from lxml import etree
from wsgidav.dav_error import DAVErrorCondition

from oxidav.providers.dav.request_server import supported_reports
from oxidav.xml_chars import replace_xml_invalid

CALSERVER_NS = "http://calendarserver.org/ns/"
CS = f"{{{CALSERVER_NS}}}"

GETCTAG = CS + "getctag"
SYNC_TOKEN = "{DAV:}sync-token"
GETETAG = "{DAV:}getetag"
DISPLAYNAME = "{DAV:}displayname"
RESOURCETYPE = "{DAV:}resourcetype"
SUPPORTED_REPORT_SET = "{DAV:}supported-report-set"
CURRENT_USER_PRIVILEGE_SET = "{DAV:}current-user-privilege-set"
CURRENT_USER_PRINCIPAL = "{DAV:}current-user-principal"
OWNER = "{DAV:}owner"

#: Privileges of an owner on everything below their home (RFC 3744 §3).
OWNER_PRIVILEGES = (
    "{DAV:}read",
    "{DAV:}write",
    "{DAV:}write-properties",
    "{DAV:}write-content",
    "{DAV:}bind",
    "{DAV:}unbind",
    "{DAV:}read-current-user-privilege-set",
)


def condition(clark_name: str, href: str | None = None) -> DAVErrorCondition:
    """A ``DAV:error`` body naming ``clark_name``, with an optional ``DAV:href`` inside."""
    cond = DAVErrorCondition(clark_name)
    if href is not None:
        # DAVErrorCondition.add_href only admits lock conditions; the list itself is generic.
        cond.hrefs.append(href)
    return cond


def href_element(tag: str, *hrefs: str) -> etree._Element:
    element = etree.Element(tag)
    for href in hrefs:
        etree.SubElement(element, "{DAV:}href").text = href
    return element


def text_element(tag: str, text: str) -> etree._Element:
    """``<tag>text</tag>``. A character XML cannot carry (stored before writes refused them)
    is answered as U+FFFD, so the rest of the answer is still sent."""
    element = etree.Element(tag)
    try:
        element.text = text
    except ValueError:
        element.text = replace_xml_invalid(text)
    return element


def element_text(element: etree._Element) -> str:
    """All text inside ``element`` (a property value sent by the client)."""
    return "".join(str(part) for part in element.itertext())


def privilege_set(privileges: tuple[str, ...] = OWNER_PRIVILEGES) -> etree._Element:
    """DAV:current-user-privilege-set (RFC 3744 §5.4)."""
    element = etree.Element(CURRENT_USER_PRIVILEGE_SET)
    for name in privileges:
        etree.SubElement(etree.SubElement(element, "{DAV:}privilege"), name)
    return element


def resourcetype(*kinds: str) -> etree._Element:
    """DAV:resourcetype of a collection (RFC 4918 §15.9) that is also each of ``kinds``."""
    element = etree.Element(RESOURCETYPE)
    etree.SubElement(element, "{DAV:}collection")
    for kind in kinds:
        etree.SubElement(element, kind)
    return element


def supported_report_set(resource: Any) -> etree._Element:
    """DAV:supported-report-set (RFC 3253 §3.1.5): the application's reports that apply."""
    element = etree.Element(SUPPORTED_REPORT_SET)
    for name in supported_reports(resource):
        report = etree.SubElement(
            etree.SubElement(element, "{DAV:}supported-report"), "{DAV:}report"
        )
        etree.SubElement(report, name)
    return element

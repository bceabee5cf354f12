"""The OCS envelope: ``{"ocs": {"meta": …, "data": …}}`` as compact JSON or as XML.

Nextcloud's OCS API answers in XML unless ``?format=json`` (or an ``Accept`` of
``application/json``) asks for JSON. v1 reports success as ``statuscode`` 100, v2 as 200.
JSON is written without spaces: the desktop client finds the status with the regular
expression ``"statuscode":(\\d+)`` (docs/nextcloud-protocol.md#capabilities).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from lxml import etree

JSON_TYPE = "application/json; charset=utf-8"
XML_TYPE = "text/xml; charset=UTF-8"

#: OCS status codes (lib/private/AppFramework/OCS): success per API version, and failures.
OK_V1 = 100
OK_V2 = 200
NOT_LOGGED_IN = 997


def wants_json(environ: Mapping[str, Any]) -> bool:
    """``format=json`` in the query, or no format and an ``Accept`` that names JSON."""
    query = parse_qs(str(environ.get("QUERY_STRING", "")))
    fmt = (query.get("format") or [""])[0].lower()
    if fmt:
        return fmt == "json"
    return "application/json" in str(environ.get("HTTP_ACCEPT", ""))


def envelope(status_code: int, message: str, data: Any, ok: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "status": "ok" if ok else "failure",
        "statuscode": status_code,
        "message": message,
    }
    if status_code in (OK_V1, NOT_LOGGED_IN):
        meta.update(totalitems="", itemsperpage="")
    return {"ocs": {"meta": meta, "data": data}}


def to_json(document: Any) -> bytes:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _fill(element: etree._Element, value: Any) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            _fill(etree.SubElement(element, str(key)), item)
    elif isinstance(value, list | tuple):
        for item in value:
            _fill(etree.SubElement(element, "element"), item)
    elif isinstance(value, bool):
        element.text = "1" if value else ""
    elif value is not None:
        element.text = str(value)


def to_xml(document: Mapping[str, Any]) -> bytes:
    """Nextcloud's XML rendering: maps become elements, lists ``<element>``, true ``1``."""
    (root_name, content), *_ = document.items()
    root = etree.Element(root_name)
    _fill(root, content)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def render(document: dict[str, Any], as_json: bool) -> tuple[bytes, str]:
    """The body and the Content-Type of ``document`` in the asked-for format."""
    if as_json:
        return to_json(document), JSON_TYPE
    return to_xml(document), XML_TYPE

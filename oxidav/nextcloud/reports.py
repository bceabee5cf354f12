"""``REPORT oc:filter-files``: the user's favorites below a folder (Nextcloud FilesReportPlugin).

The body names the properties wanted (``d:prop``) and the rules (``oc:filter-rules`` with
``oc:favorite`` 1); the answer is a multistatus with one response per favorite file or folder
at or below the target folder, with the asked-for properties (enrichers included). Other
rules (``oc:systemtag``, ``oc:circle``) are not supported: 400 for a report without a
favorite rule, as oxidav has no tags yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from lxml import etree
from wsgidav.dav_error import HTTP_BAD_REQUEST, DAVError

from oxidav.nextcloud.enrichers import OC
from oxidav.nextcloud.favorites import list_favorites
from oxidav.providers.multistatus import property_names, response_bytes, send_multistatus
from oxidav.providers.request_server import OxiRequestServer, register_report
from oxidav.tree.types import NodeInfo

FILTER_FILES = OC + "filter-files"


def _wanted(body: etree._Element) -> tuple[list[str], bool]:
    prop = body.find("{DAV:}prop")
    names = property_names(prop) if prop is not None else ["{DAV:}resourcetype"]
    rules = body.find(OC + "filter-rules")
    favorite = rules is not None and (rules.findtext(OC + "favorite") or "").strip() == "1"
    return names, favorite


class FilterFilesReport:
    name = FILTER_FILES

    def applies_to(self, resource: Any) -> bool:
        return bool(resource.is_collection) and isinstance(
            getattr(resource, "node", None), NodeInfo
        )

    def handle(
        self,
        server: OxiRequestServer,
        environ: dict[str, Any],
        start_response: Any,
        resource: Any,
        body: etree._Element,
    ) -> Iterable[bytes]:
        names, favorite = _wanted(body)
        if not favorite:
            raise DAVError(HTTP_BAD_REQUEST, "only the oc:favorite filter rule is supported")
        folder: NodeInfo = resource.node
        with resource.provider.backend.db.read() as session:
            nodes = list_favorites(session, folder.user_id, below=folder.path)
        base = resource.path.rstrip("/")

        def responses() -> Iterator[bytes]:
            for node in nodes:
                if node.id == folder.id:
                    continue
                member = resource.provider.get_resource_inst(
                    base + node.path[len(folder.path) :], environ
                )
                if member is None:
                    continue
                properties = member.get_properties("named", name_list=names)
                yield response_bytes(member.get_href(), properties)

        return send_multistatus(environ, start_response, responses())


#: One instance for the process: every app built registers this same object (idempotent).
FILTER_FILES_REPORT = FilterFilesReport()


def register() -> None:
    register_report(FILTER_FILES_REPORT)

"""``REPORT oc:filter-files``: the user's favorites below a folder (Nextcloud FilesReportPlugin).

The body names the properties wanted (``d:prop``) and the rules (``oc:filter-rules`` with
``oc:favorite`` 1); the answer is a multistatus with one response per file or folder the
*caller* marked as favorite at or below the target folder — in a share, the caller's marks,
never the owner's; at or above the caller's mount folder, their marks inside their mounts as
well — with the asked-for properties (enrichers included). Other
rules (``oc:systemtag``, ``oc:circle``) are not supported: 400 for a report without a
favorite rule, as oxidav has no tags yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from lxml import etree
from wsgidav.dav_error import HTTP_BAD_REQUEST, DAVError

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants.mounts import mounts_of
from oxidav.authz.grants.views import views_of
from oxidav.environ import ENVIRON_VIEWS, principal_of
from oxidav.nextcloud.enrichers import OC
from oxidav.nextcloud.favorites import list_favorites
from oxidav.providers.dav.multistatus import property_names, response_bytes, send_multistatus
from oxidav.providers.dav.request_server import OxiRequestServer
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
        principal = principal_of(environ)
        caller = principal.user_id if isinstance(principal, Principal) else folder.user_id
        base = resource.path.rstrip("/")
        found: list[str] = []
        with resource.provider.backend.db.read() as session:
            for node in list_favorites(session, caller, folder.path, folder.user_id):
                if node.id != folder.id:
                    found.append(base + node.path[len(folder.path) :])
            table = mounts_of(environ)
            if folder.user_id == caller and table is not None and table.rolls_up(folder.path):
                # The members inside the mounts are served through the mounts' views.
                url_folder = resource.provider.share_path + base + table.folder[len(folder.path) :]
                environ[ENVIRON_VIEWS] = (*views_of(environ), *table.views(url_folder))
                for mount in table.mounts:
                    at = f"{base}{table.folder[len(folder.path) :]}/{mount.name}"
                    shared = mount.node
                    for node in list_favorites(session, caller, shared.path, shared.user_id):
                        found.append(at + node.path[len(shared.path) :])

        def responses() -> Iterator[bytes]:
            for path in found:
                member = resource.provider.get_resource_inst(path, environ)
                if member is None:
                    continue
                properties = member.get_properties("named", name_list=names)
                yield response_bytes(member.get_href(), properties)

        return send_multistatus(environ, start_response, responses())


#: The REPORTs of the Nextcloud layer (``make_app`` hands them to the request server).
REPORTS = (FilterFilesReport(),)

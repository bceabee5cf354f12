"""The DAV root, ``/remote.php/dav/``: where clients start discovery (RFC 5397).

A PROPFIND here answers ``current-user-principal`` for the authenticated user and lists the
top-level collections that other providers serve.
"""

from __future__ import annotations

from typing import Any

from lxml import etree
from wsgidav.dav_provider import DAVCollection, DAVProvider

from oxidav.urls import principal_href

CURRENT_USER_PRINCIPAL = "{DAV:}current-user-principal"


def href_element(tag: str, href: str) -> etree._Element:
    element = etree.Element(tag)
    etree.SubElement(element, "{DAV:}href").text = href
    return element


class DavRoot(DAVCollection):  # type: ignore[misc]
    def get_member_names(self) -> list[str]:
        return []

    def get_display_name(self) -> str:
        return "oxidav"

    def get_property_names(self, *, is_allprop: bool) -> list[str]:
        names: list[str] = super().get_property_names(is_allprop=is_allprop)
        return [*names, CURRENT_USER_PRINCIPAL]

    def get_property_value(self, name: str) -> Any:
        if name == CURRENT_USER_PRINCIPAL:
            user = self.environ.get("wsgidav.auth.user_name")
            if not user:
                return etree.Element(name)
            return href_element(name, principal_href(user, self.provider.mount_path))
        return super().get_property_value(name)


class DavRootProvider(DAVProvider):  # type: ignore[misc]
    """Serves only the root collection; everything below it belongs to other providers."""

    def get_resource_inst(self, path: str, environ: dict[str, Any]) -> DavRoot | None:
        if path in ("", "/"):
            return DavRoot("/", environ)
        return None

    def is_readonly(self) -> bool:
        return True

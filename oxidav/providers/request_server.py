"""oxidav's RequestServer: WsgiDAV's, plus the methods WsgiDAV lacks (REPORT first of all).

WsgiDAV answers 405 for any method it does not know before a provider hook runs, so new methods
are added here (wsgidav.md §2.4 B). Reports are registered, not hard-coded: a room contributes
a ``Report`` and calls ``register_report``; ``supported-report-set`` is computed from the
registry.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from lxml import etree
from wsgidav import util
from wsgidav.dav_error import HTTP_BAD_REQUEST, HTTP_NOT_FOUND, DAVError
from wsgidav.request_server import RequestServer


class Report(Protocol):
    """One REPORT type (RFC 3253 §3.6), identified by the Clark name of its body element."""

    name: str

    def applies_to(self, resource: Any) -> bool:
        """Whether this report may be run on ``resource`` (listed in its supported-report-set)."""
        ...

    def handle(
        self,
        server: OxiRequestServer,
        environ: dict[str, Any],
        start_response: Any,
        resource: Any,
        body: etree._Element,
    ) -> Iterable[bytes]:
        """Answer the report."""
        ...


REPORTS: dict[str, Report] = {}


def register_report(report: Report) -> None:
    REPORTS[report.name] = report


def supported_reports(resource: Any) -> list[str]:
    """Clark names of the reports that apply to ``resource``."""
    return [name for name, report in REPORTS.items() if report.applies_to(resource)]


class OxiRequestServer(RequestServer):  # type: ignore[misc]
    def __init__(self, dav_provider: Any) -> None:
        super().__init__(dav_provider)
        self._possible_methods.append("REPORT")

    def do_REPORT(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        resource = self._davProvider.get_resource_inst(environ["PATH_INFO"], environ)
        if resource is None:
            raise DAVError(HTTP_NOT_FOUND)
        body = util.parse_xml_body(environ)
        if body is None:
            raise DAVError(HTTP_BAD_REQUEST, "REPORT needs a body")
        report = REPORTS.get(body.tag)
        if report is None or not report.applies_to(resource):
            raise DAVError(
                403, "Unsupported report", err_condition=_precondition("supported-report")
            )
        result: Iterable[bytes] = report.handle(self, environ, start_response, resource, body)
        return result


def _precondition(name: str) -> Any:
    from wsgidav.dav_error import DAVErrorCondition

    return DAVErrorCondition(f"{{DAV:}}{name}")

"""DAV rooms imported by their first request: ``DeferredRoom``, the ``DeferredProvider`` that
stands for its provider in WsgiDAV's provider mapping and the ``DeferredReport`` s that stand
for its REPORTs in ``DavExtensions``.

Every worker holds what ``make_app`` imports. CalDAV and CardDAV (their providers, reports and
the calendar and contact rooms below them) are wired through these stand-ins instead, so they
are imported by the first request below their mount point, and a server whose users only keep
files never holds them (docs/deployment.md, "Memory").

Invariants:

* a room is loaded once, under a lock, by the first request that reaches its provider
  (``OxiRequestResolver`` calls ``DeferredProvider.provider_for``), which also puts the real
  provider in the application's provider mapping: later requests, and the Destination of a
  COPY or MOVE, see only the real one;
* a resource of a room exists only once the room is loaded, so a report of a room not loaded
  applies to no resource, and a loaded room's reports answer exactly as if wired directly;
* a ``DeferredReport`` has the name of one of its room's reports; the room's ``load`` must
  return a report of every name it was given (checked when it loads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from wsgidav.dav_provider import DAVProvider

from oxidav.providers.dav.request_server import ChosenReport

if TYPE_CHECKING:
    from oxidav.providers.dav.request_server import Report

#: What a room's ``load`` returns: its provider and its reports.
Loaded = tuple[DAVProvider, Sequence["Report"]]


class DeferredRoom:
    """A provider and its reports, imported and built by ``load`` on first use."""

    def __init__(self, load: Callable[[], Loaded], report_names: Sequence[str]) -> None:
        self._load = load
        self._report_names = tuple(report_names)
        self._lock = threading.Lock()
        self._loaded: tuple[DAVProvider, tuple[Report, ...]] | None = None

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    def load(self) -> tuple[DAVProvider, tuple[Report, ...]]:
        """The room's provider and reports, loading them the first time."""
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                provider, reports = self._load()
                missing = set(self._report_names) - {report.name for report in reports}
                if missing:
                    raise RuntimeError(f"the room has no report named {sorted(missing)}")
                self._loaded = (provider, tuple(reports))
            return self._loaded

    def provider(self) -> DeferredProvider:
        """The stand-in for the provider, for the provider mapping."""
        return DeferredProvider(self)

    def reports(self) -> list[DeferredReport]:
        """The stand-ins for the reports, for ``DavExtensions``."""
        return [DeferredReport(name, self) for name in self._report_names]


class DeferredProvider(DAVProvider):  # type: ignore[misc]
    """Stands for a room's provider until a request reaches it (``provider_for``)."""

    def __init__(self, room: DeferredRoom) -> None:
        super().__init__()
        self.room = room
        self._provider: DAVProvider | None = None

    def provider_for(self, app: Any) -> DAVProvider:
        """The real provider, configured as WsgiDAV configured this one, and put in place of
        this one in ``app``'s provider mapping (``app``: the WsgiDAV application)."""
        provider = self._real()
        if app.provider_map.get(self.share_path) is self:
            app.provider_map[self.share_path] = provider  # one item assigned: thread-safe
        return provider

    def _real(self) -> DAVProvider:
        provider = self._provider
        if provider is None:  # two first requests at once configure it alike, twice
            provider = self.room.load()[0]
            provider.set_share_path(self.share_path)
            if self.mount_path:
                provider.set_mount_path(self.mount_path)
            provider.set_lock_manager(self.lock_manager)
            provider.set_prop_manager(self.prop_manager)
            self._provider = provider
        return provider

    def get_resource_inst(self, path: str, environ: dict[str, Any]) -> Any:
        # Only outside ``OxiRequestResolver`` (which hands WsgiDAV the real provider).
        return self._real().get_resource_inst(path, environ)


class DeferredReport(ChosenReport):
    """Stands for the report ``name`` of a room: applies to nothing until the room is loaded,
    then answers as the room's report of that name that applies to the resource."""

    def __init__(self, name: str, room: DeferredRoom) -> None:
        self.name = name
        self.room = room

    def choose(self, resource: Any) -> Report | None:
        if not self.room.loaded:
            return None
        reports = self.room.load()[1]
        return next((r for r in reports if r.name == self.name and r.applies_to(resource)), None)

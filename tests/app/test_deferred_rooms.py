"""``DeferredRoom``: a provider and its reports loaded once, by the first request that
reaches the provider, and the real provider put in place of its stand-in."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from wsgidav.dav_provider import DAVProvider

from oxidav.providers.dav.deferred import DeferredProvider, DeferredRoom, Loaded


class Provider(DAVProvider):  # type: ignore[misc]
    def get_resource_inst(self, path: str, environ: dict[str, Any]) -> Any:
        return ("resource", path)


class Report:
    def __init__(self, name: str, kind: type) -> None:
        self.name = name
        self.kind = kind

    def applies_to(self, resource: Any) -> bool:
        return isinstance(resource, self.kind)

    def handle(self, *args: Any) -> list[bytes]:
        return [self.name.encode()]


class App:
    """What ``provider_for`` needs of a WsgiDAV application: its provider mapping."""

    def __init__(self, share: str, provider: DAVProvider) -> None:
        self.provider_map = {share: provider}


def counted_room(names: tuple[str, ...] = ("{DAV:}a", "{DAV:}b")) -> tuple[DeferredRoom, list[int]]:
    loads: list[int] = []

    def load() -> Loaded:
        loads.append(1)
        return Provider(), [Report("{DAV:}a", int), Report("{DAV:}b", str)]

    return DeferredRoom(load, names), loads


def test_reports_apply_to_nothing_before_the_room_is_loaded() -> None:
    room, loads = counted_room()
    reports = room.reports()
    assert [report.name for report in reports] == ["{DAV:}a", "{DAV:}b"]
    assert not any(report.applies_to(1) or report.applies_to("x") for report in reports)
    assert loads == [] and not room.loaded


def test_the_first_request_loads_the_room_once_and_replaces_the_stand_in() -> None:
    room, loads = counted_room()
    stand_in = room.provider()
    stand_in.set_share_path("/calendars")
    stand_in.set_mount_path("/remote.php/dav")
    app = App("/calendars", stand_in)
    found: list[DAVProvider] = []
    threads = [
        threading.Thread(target=lambda: found.append(stand_in.provider_for(app))) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == [1]
    real = found[0]
    assert all(provider is real for provider in found) and isinstance(real, Provider)
    assert not isinstance(real, DeferredProvider)
    assert app.provider_map["/calendars"] is real
    assert (real.share_path, real.mount_path) == ("/calendars", "/remote.php/dav")
    a, b = room.reports()
    assert a.applies_to(1) and not a.applies_to("x") and b.applies_to("x")
    assert list(b.handle(None, {}, None, "x", None)) == [b"{DAV:}b"]  # type: ignore[arg-type]


def test_a_room_without_a_report_it_was_named_with_refuses_to_load() -> None:
    room, _ = counted_room(("{DAV:}a", "{DAV:}missing"))
    with pytest.raises(RuntimeError, match="missing"):
        room.load()

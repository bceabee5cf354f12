"""Small requests cannot ask for large answers (issue 24, case 4), over HTTP against a live
oxidav (SQLite and PostgreSQL): a calendar-multiget naming one object many times, in several
spellings, answers it once; a property named many times in a PROPFIND or a REPORT is answered
once; a multiget naming more than ``max_report_hrefs`` hrefs is refused; a multiget of many
large objects is streamed, so the server's memory grows by far less than the answer."""

from __future__ import annotations

import base64
import http.client
import os
import subprocess
import sys
from pathlib import Path

from lxml import etree

from tests.support.live import LiveServer, Response, start_server_process

CAL = "urn:ietf:params:xml:ns:caldav"
NS = {"D": "DAV:", "C": CAL}
HOME = "/remote.php/dav/calendars/alice/"
PERSONAL = HOME + "personal/"
MATCHES_WITHIN_LIMITS = "{DAV:}number-of-matches-within-limits"


def ics(uid: str, extra: str = "") -> str:
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\n"
        f"UID:{uid}\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20260105T100000Z\r\n"
        f"DURATION:PT1H\r\n{extra}END:VEVENT\r\nEND:VCALENDAR\r\n"
    )


def put(server: LiveServer, path: str, body: str) -> Response:
    return server.request("PUT", path, body, {"Content-Type": "text/calendar; charset=utf-8"})


def big_ics(uid: str, size: int) -> str:
    """An event whose DESCRIPTION makes it about ``size`` bytes (lines folded at 75 octets)."""
    text = ("x" * (size - 300))[: max(0, size - 300)]
    line = "DESCRIPTION:" + text
    folded = "\r\n ".join(line[i : i + 74] for i in range(0, len(line), 74))
    return ics(uid, extra=folded + "\r\n")


def multiget_body(hrefs: list[str], props: str = "<D:getetag/><C:calendar-data/>") -> str:
    return (
        f'<C:calendar-multiget xmlns:D="DAV:" xmlns:C="{CAL}"><D:prop>{props}</D:prop>'
        + "".join(f"<D:href>{href}</D:href>" for href in hrefs)
        + "</C:calendar-multiget>"
    )


def responses(body: bytes) -> list[etree._Element]:
    return etree.fromstring(body).findall("D:response", NS)


def test_multiget_answers_a_repeated_href_once(live_server: LiveServer) -> None:
    event = big_ics("big", 1 << 20)
    assert put(live_server, PERSONAL + "big.ics", event).status == 201
    href = PERSONAL + "big.ics"
    spellings = [
        href,
        PERSONAL + "big%2Eics",
        PERSONAL + "%62ig.ics",
        live_server.base_url + href,
        href + "?x=1",
    ]
    hrefs = [spellings[i % len(spellings)] for i in range(60)]
    body = multiget_body(hrefs + [PERSONAL + "missing.ics"] * 20)
    assert len(body) < 8 << 10
    answer = live_server.request("REPORT", PERSONAL, body, {"Depth": "1"})
    assert answer.status == 207
    found = responses(answer.body)
    assert [r.findtext("D:href", namespaces=NS) for r in found] == [
        href,
        PERSONAL + "missing.ics",
    ]
    assert found[0].findtext(".//C:calendar-data", namespaces=NS) == event
    assert "404" in (found[1].findtext("D:status", namespaces=NS) or "")
    assert len(answer.body) < 2 * len(event)  # 60 times it before


def test_report_answers_a_repeated_property_once(live_server: LiveServer) -> None:
    event = big_ics("one", 64 << 10)
    assert put(live_server, PERSONAL + "one.ics", event).status == 201
    props = "<C:calendar-data/><D:getetag/>" * 200
    answer = live_server.request(
        "REPORT", PERSONAL, multiget_body([PERSONAL + "one.ics"], props), {"Depth": "1"}
    )
    assert answer.status == 207
    (found,) = responses(answer.body)
    assert len(found.findall(".//C:calendar-data", NS)) == 1
    assert len(found.findall(".//D:getetag", NS)) == 1
    query = (
        f'<C:calendar-query xmlns:D="DAV:" xmlns:C="{CAL}"><D:prop>{props}</D:prop>'
        '<C:filter><C:comp-filter name="VCALENDAR"/></C:filter></C:calendar-query>'
    )
    answer = live_server.request("REPORT", PERSONAL, query, {"Depth": "1"})
    assert answer.status == 207
    (found,) = responses(answer.body)
    assert len(found.findall(".//C:calendar-data", NS)) == 1
    assert len(answer.body) < 2 * len(event)


def test_propfind_answers_a_repeated_property_once(live_server: LiveServer) -> None:
    description = "d" * 50_000
    patch = (
        f'<D:propertyupdate xmlns:D="DAV:" xmlns:C="{CAL}"><D:set><D:prop>'
        f"<C:calendar-description>{description}</C:calendar-description>"
        "</D:prop></D:set></D:propertyupdate>"
    )
    assert live_server.request("PROPPATCH", PERSONAL, patch).status == 207
    body = (
        f'<D:propfind xmlns:D="DAV:" xmlns:C="{CAL}"><D:prop>'
        + "<C:calendar-description/><D:displayname/>" * 1000
        + "</D:prop></D:propfind>"
    )
    for path, depth in ((PERSONAL, "0"), (HOME, "1")):
        answer = live_server.request("PROPFIND", path, body, {"Depth": depth})
        assert answer.status == 207
        found = {r.findtext("D:href", namespaces=NS): r for r in responses(answer.body)}
        personal = found[PERSONAL]
        assert len(personal.findall(".//C:calendar-description", NS)) == 1
        assert len(personal.findall(".//D:displayname", NS)) == 1
        assert personal.findtext(".//C:calendar-description", namespaces=NS) == description
        assert len(answer.body) < len(description) + (8 << 10)


def test_multiget_over_the_href_cap_is_refused(live_server: LiveServer) -> None:
    limit = live_server.settings.max_report_hrefs
    assert put(live_server, PERSONAL + "a.ics", ics("a")).status == 201
    hrefs = [f"{PERSONAL}e{i}.ics" for i in range(limit + 1)]
    answer = live_server.request("REPORT", PERSONAL, multiget_body(hrefs), {"Depth": "1"})
    assert answer.status == 403
    error = etree.fromstring(answer.body)
    assert error.tag == "{DAV:}error" and error[0].tag == MATCHES_WITHIN_LIMITS
    # At the cap it is answered, one response per href.
    answer = live_server.request("REPORT", PERSONAL, multiget_body(hrefs[:limit]), {"Depth": "1"})
    assert answer.status == 207 and len(responses(answer.body)) == limit


def _vm_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def test_large_multiget_is_streamed(db_url: str, tmp_path: Path) -> None:
    """200 distinct events of 100 KiB in one multiget: every one answered, and the server's
    peak RSS grows by far less than the 20 MiB answer (it is not built whole)."""
    env = {**os.environ, "OXIDAV_DATABASE_URL": db_url, "OXIDAV_DATA_DIR": str(tmp_path / "d")}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "oxidav.cli",
            "user",
            "add",
            "alice",
            "--password",
            "secret",
            "--init",
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    server = start_server_process(["--port", "0"], env=env)
    try:
        port = int(server.base_url.rsplit(":", 1)[1])
        auth = {"Authorization": "Basic " + base64.b64encode(b"alice:secret").decode()}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

        def request(method: str, path: str, body: str, **headers: str) -> tuple[int, bytes]:
            conn.request(method, path, body=body.encode(), headers={**auth, **headers})
            response = conn.getresponse()
            return response.status, response.read()

        events = {f"e{i:03d}.ics": big_ics(f"e{i:03d}", 100 << 10) for i in range(200)}
        for name, event in events.items():
            status, _ = request("PUT", PERSONAL + name, event, **{"Content-Type": "text/calendar"})
            assert status == 201
        hrefs = [PERSONAL + name for name in events]
        # Warm-up: every code path of the answer runs once before the peak is reset.
        assert request("REPORT", PERSONAL, multiget_body(hrefs[:3]), Depth="1")[0] == 207
        pid = server.process.pid
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
        before = _vm_kib(pid, "VmRSS")
        status, body = request("REPORT", PERSONAL, multiget_body(hrefs), Depth="1")
        growth = (_vm_kib(pid, "VmHWM") - before) * 1024
        assert status == 207
        found = responses(body)
        assert len(found) == 200
        for response in found:
            name = (response.findtext("D:href", namespaces=NS) or "").rsplit("/", 1)[1]
            data = response.findtext(".//C:calendar-data", namespaces=NS)
            assert data == events[name]
        print(f"answer {len(body) / 2**20:.1f} MiB, peak RSS growth {growth / 2**20:.1f} MiB")
        assert growth < len(body) / 3
        conn.close()
    finally:
        server.stop()


def test_sync_collection_with_data_in_batches(live_server: LiveServer) -> None:
    """A first sync asking for calendar-data is loaded a few members at a time: every change,
    removals included, is answered once and in order, with its own data."""
    events = {f"s{i:02d}.ics": ics(f"s{i:02d}") for i in range(21)}
    for name, event in events.items():
        assert put(live_server, PERSONAL + name, event).status == 201
    for name in ("s03.ics", "s12.ics"):
        assert live_server.request("DELETE", PERSONAL + name).status == 204
    body = (
        f'<D:sync-collection xmlns:D="DAV:" xmlns:C="{CAL}"><D:sync-token/>'
        "<D:sync-level>1</D:sync-level><D:prop><D:getetag/><C:calendar-data/></D:prop>"
        "</D:sync-collection>"
    )
    answer = live_server.request("REPORT", PERSONAL, body, {"Depth": "0"})
    assert answer.status == 207
    root = etree.fromstring(answer.body)
    found = {
        (r.findtext("D:href", namespaces=NS) or "").rsplit("/", 1)[1]: r
        for r in root.findall("D:response", NS)
    }
    assert len(found) == len(root.findall("D:response", NS))
    assert set(found) == set(events) - {"s03.ics", "s12.ics"}
    for name, response in found.items():
        assert response.findtext(".//C:calendar-data", namespaces=NS) == events[name]
    assert root.findtext("D:sync-token", namespaces=NS)

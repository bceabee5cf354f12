"""The access log: one line per request at INFO, and out of the way when INFO is off."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from oxidav.access_log import AccessLog, escape_field
from tests.support.live import LiveServer


def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    start_response("206 Partial Content", [("Content-Length", "2")])
    return [b"ok"]


def call(wrapped: AccessLog) -> tuple[Iterable[bytes], list[str]]:
    statuses: list[str] = []
    environ = {"REQUEST_METHOD": "GET", "SCRIPT_NAME": "", "PATH_INFO": "/a"}
    body = wrapped(environ, lambda status, headers, exc_info=None: statuses.append(status))
    return body, statuses


def test_a_line_per_request_at_info(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="oxidav.access"):
        body, statuses = call(AccessLog(app))
        assert b"".join(body) == b"ok"
    assert statuses == ["206 Partial Content"]
    assert [r.getMessage().split(" ")[:3] for r in caplog.records] == [["GET", "/a", "206"]]


def test_steps_aside_above_info(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="oxidav.access"):
        body, statuses = call(AccessLog(app))
        assert body == [b"ok"]  # the app's own iterable, not a wrapper
    assert statuses == ["206 Partial Content"]
    assert caplog.records == []


# -- over HTTP: secrets masked, control characters escaped --------------------------------------


def _link(server: LiveServer, path: str) -> str:
    from oxidav.authz.grants.targets import user_id
    from oxidav.authz.links import store as links
    from oxidav.tree import resolve

    assert server.services is not None
    with server.services.db.write() as session:
        node = resolve(session, user_id(session, "alice"), path)
        assert node is not None
        return links.create_link(session, node).token


class _Lines(logging.Handler):
    """The access lines, waited for: a line is written after the answer's last byte."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.changed:
            self.lines.append(record.getMessage())
            self.changed.notify_all()

    def wait_for(self, count: int) -> list[str]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.lines) >= count, timeout=30)
            return list(self.lines)


@pytest.fixture
def access_lines() -> Iterator[_Lines]:
    logger = logging.getLogger("oxidav.access")
    handler, level = _Lines(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_link_and_login_tokens_are_masked(live_server: LiveServer, access_lines: _Lines) -> None:
    assert live_server.request("MKCOL", "/remote.php/dav/files/alice/P").status == 201
    token = _link(live_server, "/P")
    flow_token = "Flow" + "x" * 60
    live_server.users[token] = ""
    live_server.request("GET", f"/s/{token}", user=None)
    live_server.request("PROPFIND", f"/public.php/dav/files/{token}/", user=None)
    live_server.request("PROPFIND", "/public.php/webdav/", headers={"Depth": "0"}, user=token)
    live_server.request("GET", f"/index.php/login/v2/flow/{flow_token}", user=None)
    lines = access_lines.wait_for(5)  # MKCOL's too
    assert not any(token in line or flow_token in line for line in lines), lines
    paths = {line.split(" ")[1]: line for line in lines}
    assert f"/s/{token[:4]}…" in paths
    assert f"/public.php/dav/files/{token[:4]}…/" in paths
    assert paths["/public.php/webdav/"].split(" ")[4] in ("user=-", f"user={token[:4]}…")
    assert f"/index.php/login/v2/flow/{flow_token[:4]}…" in paths


def test_control_characters_in_a_path_cannot_forge_a_line(
    live_server: LiveServer, access_lines: _Lines
) -> None:
    forged = "/remote.php/dav/files/alice/x%0aDELETE%20/remote.php/dav/files/bob/y%20204%0d"
    live_server.request("GET", forged)
    [line] = access_lines.wait_for(1)
    assert "\n" not in line and "\r" not in line
    method, path, status, _ms, user, addr, sent, received, request_id = line.split(" ")
    assert (method, status, user, addr) == ("GET", "404", "user=alice", "addr=127.0.0.1")
    assert (
        path
        == "/remote.php/dav/files/alice/x\\x0aDELETE\\x20/remote.php/dav/files/bob/y\\x20204\\x0d"
    )
    assert sent.startswith("bytes=") and int(sent[6:]) > 0 and request_id.startswith("id=")
    assert received == "in=0"


def test_escape_field() -> None:
    assert escape_field("a b\\c\x00\u200b\u00e9") == "a\\x20b\\\\c\\x00\\u200b\u00e9"

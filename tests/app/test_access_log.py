"""The access log: one line per request at INFO, and out of the way when INFO is off."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import pytest

from oxidav.access_log import AccessLog


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

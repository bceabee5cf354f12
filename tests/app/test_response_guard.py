"""``ResponseGuard`` around misbehaving apps: every answer framed as declared, 5xx bodies clean."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from oxidav.response_guard import MisframedResponse, ResponseGuard

Started = list[tuple[str, list[tuple[str, str]]]]


def call(app: Any, method: str = "GET") -> tuple[bytes, Started]:
    started: Started = []
    environ = {"REQUEST_METHOD": method, "PATH_INFO": "/a", "HTTP_X_REQUEST_ID": "req-00000001"}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started.append((status, headers))

    body = b"".join(ResponseGuard(app)(environ, start_response))
    return body, started


def declares_475_sends_nothing(environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
    start_response("400 Bad Request", [("Content-Length", "475")])
    return iter(())


def test_a_declared_body_that_never_comes_is_answered_empty_and_closed() -> None:
    body, started = call(declares_475_sends_nothing)
    assert body == b""
    [(status, headers)] = started
    assert status == "400 Bad Request"
    assert ("Content-Length", "0") in headers and ("Connection", "close") in headers
    assert ("Content-Length", "475") not in headers


def test_a_head_answer_keeps_its_declared_length() -> None:
    body, [(_status, headers)] = call(declares_475_sends_nothing, method="HEAD")
    assert body == b"" and ("Content-Length", "475") in headers


def refusal_with_body(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    start_response("400 Bad Request", [("Content-Length", "7")])
    return [b"refused"]


@pytest.mark.parametrize("method", ["HEAD", "GET"])
def test_a_head_answer_never_carries_the_body_an_app_yields(method: str) -> None:
    body, [(_status, headers)] = call(refusal_with_body, method=method)
    assert body == (b"" if method == "HEAD" else b"refused")
    assert ("Content-Length", "7") in headers


def short_body(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Length", "10")])
    return [b"abc"]


def long_body(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Length", "2")])
    return [b"abc"]


@pytest.mark.parametrize("app", [short_body, long_body])
def test_a_body_that_breaks_its_length_after_bytes_went_out_ends_the_connection(app: Any) -> None:
    with pytest.raises(MisframedResponse):
        call(app)


def leaks(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    start_response("503 Service Unavailable", [("Content-Length", "9"), ("Retry-After", "5")])
    return [b"traceback"]


def test_a_5xx_body_is_replaced_by_the_request_id() -> None:
    body, [(status, headers)] = call(leaks)
    assert status == "503 Service Unavailable"
    assert body == b"503 Service Unavailable\nrequest id: req-00000001\n"
    assert ("Retry-After", "5") in headers and ("X-Request-ID", "req-00000001") in headers
    assert ("Content-Length", str(len(body))) in headers


def raises(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    raise ValueError("secret detail")


def test_an_escaping_exception_is_a_500_with_the_request_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    body, [(status, _headers)] = call(raises)
    assert status == "500 Internal Server Error"
    assert body == b"500 Internal Server Error\nrequest id: req-00000001\n"
    assert "req-00000001" in caplog.text and "secret detail" in caplog.text

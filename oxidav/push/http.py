"""The push client's HTTP: one keep-alive connection per thread, Basic auth, retries.

Retried: a connection that fails or drops, 429, 502, 503 and 504, after ``Retry-After`` when
the server gives one, else an exponential backoff with full jitter, until ``give_up_after``
seconds have passed; then ``ServerUnavailable``. A 401 is ``AuthenticationFailed`` at once.
"""

from __future__ import annotations

import base64
import http.client
import json
import random
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

RETRIED_STATUSES = (429, 502, 503, 504)


class PushHTTPError(Exception):
    """An answer the client cannot go on from."""


class AuthenticationFailed(PushHTTPError):
    pass


class ServerUnavailable(PushHTTPError):
    pass


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Connection:
    """Requests to one server (``base_url``: scheme, host and any base path)."""

    def __init__(
        self,
        base_url: str,
        user: str,
        password: str,
        ca_file: str | None = None,
        give_up_after: float = 300.0,
        timeout: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base_path = parts.path.rstrip("/")
        self.give_up_after = give_up_after
        self.timeout = timeout
        self.sleep = sleep
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        self.auth = f"Basic {token}"
        self.context = (
            ssl.create_default_context(cafile=ca_file) if self.scheme == "https" else None
        )
        self._local = threading.local()
        self.retries = 0

    def _connection(self) -> http.client.HTTPConnection:
        found = getattr(self._local, "connection", None)
        if found is None:
            if self.context is not None:
                found = http.client.HTTPSConnection(
                    self.host, self.port, timeout=self.timeout, context=self.context
                )
            else:
                found = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self._local.connection = found
        return found

    def _drop(self) -> None:
        found = getattr(self._local, "connection", None)
        if found is not None:
            found.close()
            self._local.connection = None

    def url_path(self, path: str) -> str:
        """The request path of server path ``path`` (``/remote.php/…``, maybe with a query),
        percent-encoded."""
        path, mark, query = path.partition("?")
        return quote(self.base_path + path, safe="/~!$&'()*+,;=:@-._") + mark + query

    def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        """One request, retried as the module docstring says."""
        started = time.monotonic()
        attempt = 0
        while True:
            wait: float | None
            try:
                answer = self._once(method, self.url_path(path), body, headers or {})
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                wait, reason = None, f"{type(exc).__name__}: {exc}"
            else:
                if answer.status == 401:
                    raise AuthenticationFailed("the server refused the user name or password")
                if answer.status not in RETRIED_STATUSES:
                    return answer
                retry_after = answer.headers.get("retry-after", "")
                wait = float(retry_after) if retry_after.isdigit() else None
                reason = f"HTTP {answer.status}"
            attempt += 1
            self.retries += 1
            if wait is None:
                wait = random.uniform(0, min(30.0, 0.25 * 2**attempt))
            if time.monotonic() - started + wait > self.give_up_after:
                raise ServerUnavailable(f"{method} {path}: still failing ({reason})")
            self.sleep(wait)

    def _once(self, method: str, path: str, body: bytes, headers: Mapping[str, str]) -> Answer:
        connection = self._connection()
        all_headers = {"Authorization": self.auth, "Content-Length": str(len(body)), **headers}
        connection.request(method, path, body=body, headers=all_headers)
        response = connection.getresponse()
        data = response.read()
        found = {k.lower(): v for k, v in response.getheaders()}
        if found.get("connection", "").lower() == "close":
            self._drop()
        return Answer(response.status, found, data)

    def post_json(self, path: str, document: Mapping[str, Any]) -> Answer:
        body = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return self.request("POST", path, body, {"Content-Type": "application/json"})

    def close(self) -> None:
        self._drop()

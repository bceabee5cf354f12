"""Why a password was not even checked: the refusals every login entry point turns into HTTP.

A ``LoginRefused`` is raised *instead of* verifying a password, so it costs no hashing. It
carries the HTTP status, a short reason (no user name, no password: safe to log and to send)
and the seconds after which a retry may succeed (the ``Retry-After`` header):

- ``TooManyFailedLogins`` (429): the user name + address pair, or the address across all user
  names, has used up its failures for the window;
- ``HashingBusy`` (503): every password-hashing slot stayed taken for the whole wait — the
  server is overloaded, the client did nothing wrong, so not 429.
"""

from __future__ import annotations

import math

HTTP_TOO_MANY_REQUESTS = 429
HTTP_SERVICE_UNAVAILABLE = 503


class LoginRefused(Exception):
    """A login refused before any password check; ``status`` is 429 or 503."""

    status = HTTP_TOO_MANY_REQUESTS
    status_line = "429 Too Many Requests"

    def __init__(self, reason: str, retry_after: float) -> None:
        super().__init__(f"{reason}; retry after {math.ceil(retry_after)} s")
        self.reason = reason
        self.retry_after = retry_after

    @property
    def retry_after_header(self) -> tuple[str, str]:
        """The ``Retry-After`` header: whole seconds, at least 1."""
        return ("Retry-After", str(max(1, math.ceil(self.retry_after))))


class TooManyFailedLogins(LoginRefused):
    """Too many failed logins for a user name + address, or for an address (429)."""

    def __init__(self, retry_after: float, reason: str = "too many failed logins") -> None:
        super().__init__(reason, retry_after)


class HashingBusy(LoginRefused):
    """No password-hashing slot became free in time (503)."""

    status = HTTP_SERVICE_UNAVAILABLE
    status_line = "503 Service Unavailable"

    def __init__(self, retry_after: float, reason: str = "password checks are busy") -> None:
        super().__init__(reason, retry_after)

"""Why a password was not even checked: the refusals every login entry point turns into HTTP.

A ``LoginRefused`` is raised *instead of* verifying a password, so it costs no hashing. It
carries the HTTP status, a short reason (no user name, no password: safe to log and to send)
and the seconds after which a retry may succeed (the ``Retry-After`` header):

- ``TooManyFailedLogins`` (429): the user name + address pair, or the address across all user
  names, has used up its failures for the window;
- ``HashingBusy`` (429): every password-hashing slot stayed taken for the whole wait. Also
  429, not 503: it is the answer to logins coming faster than they are checked, and
  Nextcloud's clients read 503 as "server in maintenance" but retry a 429 after Retry-After.
"""

from __future__ import annotations

import math

HTTP_TOO_MANY_REQUESTS = 429


class LoginRefused(Exception):
    """A login refused before any password check; ``status`` is 429."""

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
    """No password-hashing slot became free in time (429)."""

    default_reason = "password checks are busy"

    def __init__(self, retry_after: float, reason: str = default_reason) -> None:
        super().__init__(reason, retry_after)

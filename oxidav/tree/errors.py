"""The errors of tree operations, each mapping to one WebDAV status (RFC 4918 §9).

Providers translate them to HTTP; the CLI and the Nextcloud room catch them directly.
"""

from __future__ import annotations


class TreeError(Exception):
    """Base class; ``status`` is the HTTP status a DAV adapter should answer with."""

    status = 500


class InvalidName(TreeError):
    """A path segment that can never name a node (empty, ``.``, ``..``, ``/``, NUL, too long)."""

    status = 400


class NotFound(TreeError):
    """No live node at that path."""

    status = 404


class Conflict(TreeError):
    """The parent of the target is missing or not a folder (RFC 4918 §9.3.1, §9.7.1: 409)."""

    status = 409


class AlreadyExists(TreeError):
    """The target exists and may not be replaced (MKCOL on a mapped URL: 405)."""

    status = 405


class IsAFolder(TreeError):
    """File content was written to a folder."""

    status = 405


class PreconditionFailed(TreeError):
    """An If-Match / If-None-Match / Overwrite: F condition does not hold (412)."""

    status = 412


class Forbidden(TreeError):
    """The operation is never allowed (moving a folder below itself, deleting the root)."""

    status = 403


class QuotaExceeded(TreeError):
    """The user's quota would be exceeded (RFC 4331 §6: 507 with quota-not-exceeded)."""

    status = 507

"""What oxidav tells Nextcloud clients about itself: the version and the capabilities.

This is the one place that lists the Nextcloud features oxidav advertises. A client changes
its behaviour on each of them (docs/nextcloud-protocol.md#capabilities): ``dav.chunking`` selects
chunked upload v2, ``dav.bulkupload`` the bulk endpoint, ``checksums`` the ``OC-Checksum`` header.
So a feature goes in here only once it works end to end.
"""

from __future__ import annotations

from typing import Any

from oxidav.nextcloud.push import protocol as push_protocol

#: The Nextcloud server version oxidav claims to be (clients gate features on >= 10, 18, 25).
VERSION = (28, 0, 4, 1)
VERSION_STRING = "28.0.4"
PRODUCT_NAME = "Nextcloud"

#: Permissions of a user or group share created without ``permissions`` (Nextcloud's
#: ``shareapi_default_permissions``: read, update, create, delete, share).
DEFAULT_SHARE_PERMISSIONS = 31

#: Checksum algorithms oxidav verifies on upload (``OC-Checksum``), in order of preference.
CHECKSUM_TYPES = ("SHA1", "MD5", "ADLER32")


def version_text() -> str:
    """``"28.0.4.1"``: the four-part version of status.php."""
    return ".".join(str(part) for part in VERSION)


def version_block() -> dict[str, Any]:
    """The ``version`` object of the OCS capabilities answer."""
    major, minor, micro, _ = VERSION
    return {
        "major": major,
        "minor": minor,
        "micro": micro,
        "string": VERSION_STRING,
        "edition": "",
        "extendedSupport": False,
    }


def capabilities(
    bulk_upload: bool = True, chunking: tuple[int, int, int] | None = None
) -> dict[str, Any]:
    """The ``capabilities`` object of ``/ocs/v{1,2}.php/cloud/capabilities``.

    ``bulk_upload`` (setting ``nextcloud_bulk_upload``) switches ``dav.bulkupload``: without
    it clients PUT small files one by one (docs/nextcloud-protocol.md#uploads). ``chunking``:
    the blob chain's FastCDC (min, avg, max) sizes, advertised with the push protocol
    (docs/push-protocol.md) as ``oxidav.push``."""
    dav = {"chunking": "1.0", **({"bulkupload": "1.0"} if bulk_upload else {})}
    return {
        "core": {"pollinterval": 60, "webdav-root": "remote.php/webdav"},
        "dav": dav,
        "checksums": {
            "supportedTypes": list(CHECKSUM_TYPES),
            "preferredUploadType": CHECKSUM_TYPES[0],
        },
        "files": {
            "bigfilechunking": True,
            "undelete": True,
            "favorites": True,
            "versioning": False,
        },
        "files_sharing": sharing_block(),
        **({"oxidav": {"push": push_block(chunking)}} if chunking is not None else {}),
    }


def push_block(chunking: tuple[int, int, int]) -> dict[str, Any]:
    """``oxidav.push``: the push protocol's version, endpoint and chunk parameters."""
    min_size, avg_size, max_size = chunking
    return {
        "version": push_protocol.VERSION,
        "endpoint": push_protocol.PUSH_ROOT.lstrip("/"),
        "chunking": {
            "algorithm": "fastcdc-2020",
            "hash": "blake3",
            "min": min_size,
            "avg": avg_size,
            "max": max_size,
        },
        "max_chunks_body": push_protocol.MAX_CHUNKS_BODY,
        "max_commit_body": push_protocol.MAX_COMMIT_BODY,
    }


def sharing_block() -> dict[str, Any]:
    """``files_sharing``: the OCS Share API with user, group and public-link shares (the
    clients' share dialogs read it). No federation, no mail, no enforced password or expiry."""
    off = {"enabled": False}
    return {
        "api_enabled": True,
        "public": {
            "enabled": True,
            "password": {"enforced": False, "askForOptionalPassword": False},
            "expire_date": off,
            "expire_date_internal": off,
            "expire_date_remote": off,
            "multiple_links": True,
            "send_mail": False,
            "upload": True,
            "upload_files_drop": True,
        },
        "resharing": True,
        "user": {"send_mail": False, "expire_date": {"enabled": True}},
        "group_sharing": True,
        "group": {"enabled": True, "expire_date": {"enabled": True}},
        "default_permissions": DEFAULT_SHARE_PERMISSIONS,
        "federation": {"outgoing": False, "incoming": False, "expire_date": off},
        "sharebymail": off,
    }


def status(maintenance: bool = False) -> dict[str, Any]:
    """The object of ``/status.php`` (docs/nextcloud-protocol.md#status-and-discovery);
    ``maintenance`` while the database or the blob store does not answer, so clients wait instead of
    failing."""
    return {
        "installed": True,
        "maintenance": maintenance,
        "needsDbUpgrade": False,
        "version": version_text(),
        "versionstring": VERSION_STRING,
        "edition": "",
        "productname": PRODUCT_NAME,
        "extendedSupport": False,
    }

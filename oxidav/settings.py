"""Settings: one ``Settings`` object, layered defaults < oxidav.toml < OXIDAV_* env < flags.

Every setting is a field of ``Settings`` with a type and a default. ``load_settings`` reads the
layers in order, converts each value to the field's type and validates it; a bad value stops
start-up with a one-line ``SettingsError`` that names the key and the layer it came from.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib.util
import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

ENV_PREFIX = "OXIDAV_"
CONFIG_FILE_NAME = "oxidav.toml"
#: The largest ``blob_inline_max``: readers look for a chunk's bytes in its row up to this size.
INLINE_LIMIT = 64 << 10
#: SQLite's ``PRAGMA synchronous`` values oxidav offers (``oxidav.db.engine``), the default first.
SQLITE_SYNCHRONOUS = ("normal", "full")


class SettingsError(ValueError):
    """A setting has a value oxidav cannot use. The message names the key."""


class MissingBackendError(SettingsError):
    """A setting names a backend whose Python package is not installed (``oxidav.backends``)."""


def missing_backend(setting: str, what: str, extra: str) -> MissingBackendError:
    return MissingBackendError(
        f"setting {setting!r} names {what}, whose Python package is not installed: "
        f"pip install 'oxidav[{extra}]'"
    )


def check_installed(settings: Settings) -> None:
    """Raise ``MissingBackendError`` if a setting names a backend that is not installed
    (looked up without importing it), before anything was opened or created."""
    scheme = settings.database_url.split(":", 1)[0].split("+")[0]
    if scheme in ("postgresql", "postgres") and importlib.util.find_spec("psycopg2") is None:
        raise missing_backend("database_url", "PostgreSQL", "postgres")
    if settings.blob_store.startswith("s3://") and importlib.util.find_spec("boto3") is None:
        raise missing_backend("blob_store", "an S3 bucket", "s3")


@dataclass(frozen=True)
class Settings:
    """Everything an oxidav process can be told. Paths are absolute once loaded."""

    #: Folder of the SQLite database, the local blob store and ``oxidav.toml``.
    data_dir: Path = Path("oxidav-data")
    #: Address to listen on.
    host: str = "127.0.0.1"
    #: Port to listen on; 0 picks a free one.
    port: int = 8080
    #: Worker threads per worker process: requests one process serves at once.
    threads: int = 32
    #: Worker processes sharing the listening socket (pre-forked by ``oxidav serve``); 0: one
    #: per CPU the process may run on. 1 serves from the one process, with no supervisor.
    workers: int = 0
    #: Seconds a client has to send a whole request head (request line and headers), from the
    #: accept, or from the first byte of a keep-alive connection's next request; then 408, closed.
    #: Until its head is complete a connection waits in the front, not in a worker thread.
    request_head_timeout: float = 20.0
    #: Largest request head (request line and headers) in bytes; beyond it 431, closed.
    max_request_head_bytes: int = 64 << 10
    #: Seconds SIGTERM / SIGINT give the requests under way to finish (nothing new is accepted
    #: meanwhile); then the connections still served are cut and the process exits.
    shutdown_timeout: float = 30.0
    #: PEM certificate (chain) and private key files: set both to serve HTTPS; empty: HTTP.
    tls_cert: str = ""
    tls_key: str = ""
    #: Addresses / CIDR networks of reverse proxies whose X-Forwarded-For, -Proto, -Host and
    #: Forwarded headers are believed (``oxidav.origin``); empty: nobody's.
    trusted_proxies: tuple[str, ...] = ()
    #: ``https://host[:port]`` every generated absolute URL starts with (Nextcloud's
    #: ``overwrite.cli.url``); empty: the request's host if trusted (``trusted_hosts``).
    public_url: str = ""
    #: Host names (or name:port) generated URLs may use (Nextcloud's ``trusted_domains``);
    #: empty: loopback names and ``host``. Another host gets the first of these instead.
    trusted_hosts: tuple[str, ...] = ()
    #: Path prefix oxidav is served under (``/cloud``: ``https://host/cloud/remote.php/dav/…``);
    #: every URL, href and redirect it answers carries it, and a path outside it is 404.
    #: A reverse proxy forwards the prefix as it is (``oxidav.base_path``). Empty: none.
    base_path: str = ""
    #: SQLAlchemy URL; empty means ``sqlite:///<data_dir>/oxidav.db``.
    database_url: str = ""
    #: SQLite only: ``normal`` syncs the WAL at checkpoints (a power loss may roll back the last
    #: commits; a crash of the process loses none), ``full`` at every commit (``oxidav.db.engine``).
    sqlite_synchronous: str = "normal"
    #: Blob store URL: ``file:///path`` or ``s3://bucket/prefix?endpoint_url=…&region=…``;
    #: empty means ``file://<data_dir>/blobs``.
    blob_store: str = ""
    #: Folder of the size-bounded local cache in front of a remote blob store; empty: none.
    blob_cache: str = ""
    #: Size bound of ``blob_cache`` in bytes.
    blob_cache_bytes: int = 1 << 30
    #: FastCDC chunk sizes in bytes (min / avg / max; the mean chunk is about avg + min). They
    #: decide every chunk boundary: content ingested with other values no longer deduplicates
    #: against older content (nothing breaks). ``python -m bench blobs_chunk_params`` chose them.
    blob_chunk_min: int = 256 << 10
    #: See ``blob_chunk_min``.
    blob_chunk_avg: int = 1 << 20
    #: See ``blob_chunk_min``.
    blob_chunk_max: int = 4 << 20
    #: A PUT of a content that is one chunk of at most this many bytes keeps it in the database
    #: row of its chunk, committed with the file's node, instead of a synced blob-store file
    #: (``oxidav.blobs.inline``); 0: never. Not with ``encryption_keys`` (rows are not
    #: encrypted).
    blob_inline_max: int = 16 << 10
    #: Base64 AES-256 keys; the first encrypts new blobs, all of them decrypt.
    encryption_keys: tuple[str, ...] = ()
    #: Password of the ``admin`` user created on an empty database; empty: random, printed.
    admin_password: str = ""
    #: How long a verified credential is trusted without running argon2 again.
    auth_cache_seconds: float = 60.0
    #: Failed logins per user+address within ``auth_failure_window`` before 429.
    auth_max_failures: int = 10
    #: Seconds over which failed logins are counted (``auth_max_failures``).
    auth_failure_window: float = 300.0
    #: Failed password checks per client address (an IPv6 /64), whatever the user names,
    #: within ``auth_failure_window`` before 429; checks in flight count.
    auth_max_failures_per_address: int = 50
    #: Password hashes (argon2, 64 MiB each) computed at once, process-wide.
    auth_hash_concurrency: int = 2
    #: How long a login waits for a free hashing slot before 503 with Retry-After.
    auth_hash_wait_seconds: float = 2.0
    #: Depth: infinity PROPFIND: 0 refuses it (403 propfind-finite-depth); N > 0 allows it
    #: for trees of at most N resources.
    propfind_infinity_limit: int = 0
    #: Longest a WebDAV lock lasts before its holder refreshes it, in seconds; a longer
    #: Timeout (``Infinite`` too) gets this (RFC 4918 §10.7). 30 min, as Nextcloud (SabreDAV):
    #: editors refresh their locks every few minutes, a forgotten one frees itself soon.
    lock_max_timeout: int = 1800
    #: Quota for users without one of their own; 0 means unlimited.
    default_quota_bytes: int = 0
    #: Largest calendar object / vCard accepted, in bytes.
    max_resource_bytes: int = 10 << 20
    #: Most hrefs a calendar-multiget / addressbook-multiget may name; more is refused (403
    #: DAV:number-of-matches-within-limits). Clients ask in batches of 10 to a few hundred.
    max_report_hrefs: int = 1000
    #: Largest XML request body (PROPFIND, PROPPATCH, LOCK, REPORT, SEARCH, MKCOL, MKCALENDAR)
    #: accepted, in bytes; a larger one is refused with 413.
    max_xml_body_bytes: int = 1 << 20
    #: A recurrence may produce at most one instance per this many seconds (averaged over a
    #: day); denser rules (FREQ=SECONDLY, MINUTELY, ...) are refused at PUT. 1 allows all.
    caldav_min_recurrence_interval: int = 3600
    #: Instances one calendar object may generate (COUNT, RDATEs; CALDAV:max-instances) and
    #: produce for one request.
    caldav_max_instances: int = 10_000
    #: Recurrence work (rule periods visited plus instances produced) allowed to one request
    #: or one PUT validation; beyond it a report answers 507 and a PUT 403.
    caldav_max_recurrence_work: int = 100_000
    #: Identifies this installation in Nextcloud ``oc:id`` values and status.php.
    instance_id: str = "oc0000000001"
    #: Push protocol (``oxidav push``): bytes of one user's request bodies under way in one
    #: process; beyond it a request is answered 429 with Retry-After (one alone always passes).
    push_inflight_bytes: int = 64 << 20
    #: Advertise Nextcloud bulk upload (``dav.bulkupload``) to clients.
    nextcloud_bulk_upload: bool = True
    #: Oldest Nextcloud desktop client (User-Agent ``mirall/X.Y.Z``) offered bulk upload; older
    #: desktop clients abort every bulk batch that holds an empty file, so they PUT instead.
    #: ``0`` offers it to every version.
    nextcloud_bulk_min_desktop: str = "3.10"
    #: Folder of each user's tree where files and folders shared with them appear (Nextcloud's
    #: ``share_folder``): ``/`` (the root) or e.g. ``/Shared``, created on first need.
    share_folder: str = "/"
    #: Seconds between passes of the background sweep (abandoned upload sessions, blobs
    #: unreferenced for ``sweep_grace_seconds``); 0 turns it off.
    sweep_interval_seconds: float = 600.0
    #: Content unreferenced for this long is collected by the sweep; must exceed the longest
    #: upload (a chunk an ingest relies on could otherwise go before it commits).
    sweep_grace_seconds: float = 3600.0
    #: DEBUG, INFO, WARNING or ERROR. Below DEBUG, Alembic, SQLAlchemy, botocore, urllib3,
    #: cheroot and WsgiDAV log at WARNING only.
    log_level: str = "INFO"
    #: ``text`` (one line per record) or ``json`` (one JSON object per line, access lines
    #: with their fields as keys).
    log_format: str = "text"
    #: Addresses / CIDRs whose direct requests may read ``/metrics``; others get 404, and so
    #: does any request that came through a proxy (a Forwarded / X-Forwarded-For header).
    metrics_allow: tuple[str, ...] = ("127.0.0.0/8", "::1")

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'oxidav.db'}"

    @property
    def resolved_workers(self) -> int:
        """``workers``, with 0 resolved to the CPUs this process may run on."""
        if self.workers:
            return self.workers
        return max(1, len(os.sched_getaffinity(0)))

    @property
    def resolved_blob_store(self) -> str:
        return self.blob_store or (self.data_dir / "blobs").as_uri()

    def encryption_key_bytes(self) -> list[bytes]:
        return [base64.b64decode(key) for key in self.encryption_keys]

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError("expected true or false")


def _to_tuple(value: Any) -> tuple[str, ...]:
    if isinstance(value, list | tuple):
        return tuple(str(item) for item in value)
    return tuple(part.strip() for part in str(value).split(",") if part.strip())


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": _to_bool,
    "Path": lambda v: Path(str(v)).expanduser(),
    "tuple[str, ...]": _to_tuple,
}


#: A client version setting: one to three dotted integers (``3.10``, ``3.9.1``), as
#: ``oxidav.nextcloud.client_version.parse_version`` reads them.
_VERSION = re.compile(r"\d{1,4}(\.\d{1,6}){0,2}")


def _is_version(text: str) -> bool:
    return _VERSION.fullmatch(text.strip()) is not None


def _validate(settings: Settings) -> None:
    checks: list[tuple[str, bool, str]] = [
        ("port", 0 <= settings.port <= 65535, "must be between 0 and 65535"),
        ("threads", 1 <= settings.threads <= 1024, "must be between 1 and 1024"),
        ("workers", 0 <= settings.workers <= 256, "must be between 0 (one per CPU) and 256"),
        (
            "request_head_timeout",
            0 < settings.request_head_timeout <= 3600,
            "must be more than 0 and at most 3600 seconds",
        ),
        (
            "shutdown_timeout",
            0 <= settings.shutdown_timeout <= 3600,
            "must be between 0 and 3600 seconds",
        ),
        (
            "max_request_head_bytes",
            1024 <= settings.max_request_head_bytes <= 1 << 20,
            "must be between 1024 and 1048576",
        ),
        (
            "tls_key",
            bool(settings.tls_cert) == bool(settings.tls_key),
            "tls_cert and tls_key must be set together",
        ),
        ("blob_cache_bytes", settings.blob_cache_bytes > 0, "must be positive"),
        (
            "blob_chunk_min",
            64 <= settings.blob_chunk_min <= min(settings.blob_chunk_avg, 1 << 20),
            "must be between 64 and min(blob_chunk_avg, 1 MiB)",
        ),
        (
            "blob_chunk_avg",
            256 <= settings.blob_chunk_avg <= settings.blob_chunk_max,
            "must be between 256 and blob_chunk_max",
        ),
        ("blob_chunk_max", 1024 <= settings.blob_chunk_max <= 4 << 20, "must be 1 KiB to 4 MiB"),
        (
            "blob_inline_max",
            0 <= settings.blob_inline_max <= INLINE_LIMIT,
            f"must be between 0 and {INLINE_LIMIT}",
        ),
        ("auth_cache_seconds", settings.auth_cache_seconds >= 0, "must not be negative"),
        ("sweep_interval_seconds", settings.sweep_interval_seconds >= 0, "must not be negative"),
        ("sweep_grace_seconds", settings.sweep_grace_seconds >= 60, "must be at least 60"),
        ("push_inflight_bytes", settings.push_inflight_bytes >= 0, "must not be negative"),
        ("auth_max_failures", settings.auth_max_failures >= 1, "must be at least 1"),
        (
            "nextcloud_bulk_min_desktop",
            _is_version(settings.nextcloud_bulk_min_desktop),
            "must be a version like 3.10 or 3.10.0 (0 for every version)",
        ),
        ("auth_failure_window", settings.auth_failure_window > 0, "must be positive"),
        (
            "auth_max_failures_per_address",
            settings.auth_max_failures_per_address >= 1,
            "must be at least 1",
        ),
        (
            "auth_hash_concurrency",
            1 <= settings.auth_hash_concurrency <= 64,
            "must be between 1 and 64",
        ),
        (
            "auth_hash_wait_seconds",
            0 < settings.auth_hash_wait_seconds <= 60,
            "must be more than 0 and at most 60",
        ),
        ("propfind_infinity_limit", settings.propfind_infinity_limit >= 0, "must not be negative"),
        (
            "lock_max_timeout",
            60 <= settings.lock_max_timeout <= 4 * 604800,
            "must be between 60 and 2419200 (4 weeks)",
        ),
        ("default_quota_bytes", settings.default_quota_bytes >= 0, "must not be negative"),
        ("max_resource_bytes", settings.max_resource_bytes > 0, "must be positive"),
        ("max_report_hrefs", settings.max_report_hrefs >= 1, "must be at least 1"),
        (
            "max_xml_body_bytes",
            1024 <= settings.max_xml_body_bytes <= 64 << 20,
            "must be between 1 KiB and 64 MiB",
        ),
        (
            "caldav_min_recurrence_interval",
            settings.caldav_min_recurrence_interval >= 1,
            "must be at least 1",
        ),
        ("caldav_max_instances", settings.caldav_max_instances >= 1, "must be at least 1"),
        (
            "caldav_max_recurrence_work",
            settings.caldav_max_recurrence_work >= 1000,
            "must be at least 1000",
        ),
        (
            "log_level",
            settings.log_level.upper() in {"DEBUG", "INFO", "WARNING", "ERROR"},
            "must be DEBUG, INFO, WARNING or ERROR",
        ),
        (
            "log_format",
            settings.log_format in ("text", "json"),
            "must be text or json",
        ),
        (
            "sqlite_synchronous",
            settings.sqlite_synchronous in SQLITE_SYNCHRONOUS,
            "must be " + " or ".join(SQLITE_SYNCHRONOUS),
        ),
        (
            "database_url",
            not settings.database_url
            or settings.database_url.split(":", 1)[0].split("+")[0] in {"sqlite", "postgresql"},
            "must be a sqlite:/// or postgresql+psycopg2:// URL",
        ),
        (
            "share_folder",
            settings.share_folder.startswith("/")
            and not any(p in (".", "..") for p in settings.share_folder.split("/"))
            and "\\" not in settings.share_folder,
            "must be an absolute folder path such as / or /Shared",
        ),
        (
            "blob_store",
            not settings.blob_store or settings.blob_store.startswith(("file://", "s3://")),
            "must be a file:// or s3:// URL",
        ),
    ]
    for key, ok, why in checks:
        if not ok:
            raise SettingsError(f"invalid setting {key!r}: {why}")
    for network in settings.metrics_allow:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise SettingsError(
                f"invalid setting 'metrics_allow': {network!r} is not an IP address or CIDR"
            ) from None
    from oxidav.origin import parse_networks, public_url_problem

    try:
        parse_networks(settings.trusted_proxies)
    except ValueError as exc:
        raise SettingsError(f"invalid setting 'trusted_proxies': {exc}") from None
    problem = public_url_problem(settings.public_url)
    if problem:
        raise SettingsError(f"invalid setting 'public_url': {problem}")
    from oxidav.base_path import base_path_problem

    problem = base_path_problem(settings.base_path)
    if problem:
        raise SettingsError(f"invalid setting 'base_path': {problem}")
    for host in settings.trusted_hosts:
        if not host or any(c in host for c in "/ @"):
            raise SettingsError(f"invalid setting 'trusted_hosts': {host!r} is not a host[:port]")
    for key in settings.encryption_keys:
        try:
            raw = base64.b64decode(key, validate=True)
        except ValueError:
            raw = b""
        if len(raw) != 32:
            raise SettingsError(
                "invalid setting 'encryption_keys': each key must be 32 bytes, base64-encoded"
            )


def _apply(
    values: dict[str, Any],
    layer: Mapping[str, Any],
    source: str,
    strict_keys: bool,
    sources: dict[str, str] | None = None,
    label: Callable[[str], str] = lambda key: key,
) -> None:
    known = {f.name: f for f in fields(Settings)}
    for key, raw in layer.items():
        if key not in known:
            if strict_keys:
                raise SettingsError(f"unknown setting {key!r} in {source}")
            continue
        convert = _CONVERTERS[str(known[key].type)]
        try:
            values[key] = convert(raw)
        except (TypeError, ValueError) as exc:
            raise SettingsError(f"invalid setting {key!r} from {source}: {exc}") from None
        if sources is not None:
            sources[key] = label(key)


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only with a config file

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"invalid config file {path}: {exc}") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SettingsError(f"cannot read config file {path} ({reason}); set --config") from None


def load_settings(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Build ``Settings`` from defaults, the config file, the environment and ``flags``.

    ``flags`` holds only the options actually given on the command line. The config file is
    ``config_file`` if given, else ``oxidav.toml`` in the data dir (which itself may come from
    the environment or the flags).
    """
    return load_settings_with_sources(flags, env, config_file)[0]


def load_settings_with_sources(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> tuple[Settings, dict[str, str]]:
    """``load_settings``, and where each setting came from: ``default``, ``file PATH``,
    ``env OXIDAV_NAME`` or ``flag --name``."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    env = os.environ if env is None else env
    env_layer = {
        name[len(ENV_PREFIX) :].lower(): value
        for name, value in env.items()
        if name.startswith(ENV_PREFIX) and name[len(ENV_PREFIX) :].lower() in _field_names()
    }
    values: dict[str, Any] = {}
    # The data dir decides where oxidav.toml is, so resolve it from the upper layers first.
    _apply(values, {k: v for k, v in env_layer.items() if k == "data_dir"}, "environment", True)
    _apply(values, {k: v for k, v in flags.items() if k == "data_dir"}, "command line", True)
    data_dir = Path(values.get("data_dir", Settings.data_dir))
    path = config_file or data_dir / CONFIG_FILE_NAME
    layered: dict[str, Any] = {}
    sources = {name: "default" for name in _field_names()}
    if config_file is not None and not config_file.exists():
        raise SettingsError(f"config file {config_file} does not exist")
    if path.exists():
        _apply(layered, _read_toml(path), str(path), True, sources, lambda _k: f"file {path}")
    _apply(layered, env_layer, "environment", True, sources, lambda k: "env " + env_name(k))
    _apply(layered, flags, "command line", True, sources, lambda k: "flag " + flag_name(k))
    layered["data_dir"] = Path(layered.get("data_dir", data_dir)).absolute()
    settings = Settings(**layered)
    _validate(settings)
    check_installed(settings)
    return settings, sources


def env_name(key: str) -> str:
    return ENV_PREFIX + key.upper()


def flag_name(key: str) -> str:
    return "--" + key.replace("_", "-")


#: ``OXIDAV_*`` names that are not settings: the test suite's own switches.
NOT_SETTINGS_PREFIXES = ("OXIDAV_TEST_", "OXIDAV_REQUIRE_PG", "OXIDAV_FUZZ_")


def unknown_env_warnings(env: Mapping[str, str] | None = None) -> list[str]:
    """One line for each ``OXIDAV_*`` variable that names no setting, with the closest
    setting's variable when one is close."""
    env = os.environ if env is None else env
    known = sorted(env_name(name) for name in _field_names())
    lines = []
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name.upper() in known:
            continue
        if name.startswith(NOT_SETTINGS_PREFIXES):
            continue
        # Compared without the prefix every name shares, which would make all look alike.
        key = name[len(ENV_PREFIX) :].lower()
        import difflib  # only for a misspelt name

        close = difflib.get_close_matches(key, sorted(_field_names()), n=1, cutoff=0.7)
        hint = f"; did you mean {env_name(close[0])}?" if close else ""
        lines.append(f"unknown environment variable {name} is ignored{hint}")
    return lines


def _field_names() -> set[str]:
    return {f.name for f in fields(Settings)}


__all__ = [
    "Settings",
    "SettingsError",
    "env_name",
    "flag_name",
    "load_settings",
    "load_settings_with_sources",
    "unknown_env_warnings",
]

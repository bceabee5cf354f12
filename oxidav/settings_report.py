"""What the settings are, told to an operator: ``oxidav config show`` and ``serve --help``.

- ``show_lines``: every effective setting as a TOML line with where it came from (``default``,
  ``file PATH``, ``env OXIDAV_NAME``, ``flag --name``); secrets masked (``masked``).
- ``settings_help``: every setting with its environment variable, type, default and the
  ``#:`` comment above its field in ``oxidav/settings.py`` (read from the source, so the help
  cannot drift from the code).

Invariant: no secret leaves ``masked`` — the admin password and the encryption keys are
replaced whole, a URL keeps its scheme, host and path but not the password in its user info
nor the value of a query key that looks like a credential.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import sys
import textwrap
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from oxidav.settings import Settings, env_name

MASK = "****"
#: Settings whose whole value is secret.
SECRET_SETTINGS = frozenset({"admin_password", "encryption_keys"})
#: Settings that are URLs and may carry credentials.
URL_SETTINGS = frozenset({"database_url", "blob_store"})
_SECRET_QUERY_KEY = re.compile(r"secret|password|passwd|token|credential|access_key|key_id", re.I)


def mask_url(url: str) -> str:
    """``url`` without the password of its user info or credential-like query values."""
    if not url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user, has_password, _password = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{host}" if has_password else f"{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(key, MASK if _SECRET_QUERY_KEY.search(key) else value) for key, value in pairs],
            safe="*/:",
        )
    if (netloc, query) == (parts.netloc, parts.query):
        return url  # nothing to hide (urlunsplit would respell e.g. sqlite:////path)
    rebuilt = f"{parts.scheme}://{netloc}{parts.path}"
    rebuilt += f"?{query}" if query else ""
    return rebuilt + (f"#{parts.fragment}" if parts.fragment else "")


def masked(name: str, value: Any) -> Any:
    if name in SECRET_SETTINGS:
        if isinstance(value, tuple):
            return tuple(MASK for _ in value)
        return MASK if value else value
    if name in URL_SETTINGS and isinstance(value, str):
        return mask_url(value)
    return value


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def show_lines(settings: Settings, sources: dict[str, str]) -> list[str]:
    """``name = value  # source`` for every setting, secrets masked."""
    lines = []
    for field in dataclasses.fields(Settings):
        value = masked(field.name, getattr(settings, field.name))
        lines.append(f"{field.name} = {_toml_value(value)}  # {sources.get(field.name, '?')}")
    return lines


def _field_comments() -> dict[str, str]:
    """The ``#:`` comment lines above each field of ``Settings``, joined."""
    try:
        source = inspect.getsource(Settings)
    except (OSError, TypeError):
        return {}
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r"(\w+)\s*:", stripped)
        if match and pending:
            comments[match.group(1)] = " ".join(pending)
        pending = []
    return comments


def settings_help() -> str:
    """Every setting with its environment variable, type and default, for ``--help``."""
    comments = _field_comments()
    out = [
        "settings (in oxidav.toml in the data dir, or as environment variables; a flag above",
        "beats the environment, which beats the file):",
    ]
    for field in dataclasses.fields(Settings):
        default = masked(field.name, field.default)
        out.append(
            f"  {field.name} / {env_name(field.name)}  "
            f"({field.type}, default {_toml_value(default)})"
        )
        if field.name in comments:
            out.extend(
                textwrap.wrap(
                    comments[field.name], 96, initial_indent=" " * 6, subsequent_indent=" " * 6
                )
            )
    return "\n".join(out)


def cmd_config_show(args: argparse.Namespace, settings: Settings) -> int:
    sources: dict[str, str] = getattr(args, "setting_sources", {})
    sys.stdout.write("\n".join(show_lines(settings, sources)) + "\n")
    return 0


def register(subparsers: Any) -> None:
    config = subparsers.add_parser("config", help="the effective configuration")
    sub = config.add_subparsers(dest="config_cmd", required=True)
    show = sub.add_parser("show", help="print every setting, where it came from, secrets masked")
    show.set_defaults(handler=cmd_config_show)


__all__ = ["mask_url", "masked", "register", "settings_help", "show_lines"]

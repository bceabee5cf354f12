"""The server's log stream: one handler on stderr, text or JSON lines, quiet libraries.

``configure_logging(level, fmt)`` sends oxidav's, cheroot's and WsgiDAV's records to one
handler on stderr, each with the id of the request its thread serves (``[-]`` outside one):

- ``text`` (the default): ``TIME LEVEL LOGGER [ENVIRON_REQUEST_ID]: MESSAGE``;
- ``json``: one JSON object per line for every record (keys ``time``, ``level``, ``logger``,
  ``request_id``, ``message``, ``exception`` when there is one); an access-log record also
  carries its fields (``oxidav.access_log.ACCESS_FIELDS``) as keys of its own.

Libraries that narrate their work (Alembic's migration steps, SQLAlchemy, botocore, urllib3,
cheroot, WsgiDAV) are held at WARNING unless ``log_level`` is DEBUG, so a first start does
not print the schema's history.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from oxidav.response_guard import current_request_id

LOG_FORMATS = ("text", "json")
#: Loggers kept at WARNING unless the level is DEBUG.
QUIET_LIBRARIES = (
    "alembic",
    "sqlalchemy",
    "botocore",
    "boto3",
    "s3transfer",
    "urllib3",
    "cheroot",
    "wsgidav",
)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"
#: The attribute of a record that holds an access line's fields (``oxidav.access_log``).
ACCESS_FIELDS = "access"


class RequestIdFilter(logging.Filter):
    """Gives every record the id of the request its thread serves ("-" outside one), unless
    the record names its request itself (an access line, written after its request ended)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = current_request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON (newlines inside values are escaped by JSON)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "request_id": getattr(record, "request_id", "-"),
            "message": record.getMessage(),
        }
        fields = getattr(record, ACCESS_FIELDS, None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def make_handler(fmt: str = "text", stream: TextIO | None = None) -> logging.Handler:
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(RequestIdFilter())
    return handler


def configure_logging(level: str, fmt: str = "text", stream: TextIO | None = None) -> None:
    """Route every record to one handler on ``stream`` (stderr) in ``fmt``; set the levels."""
    logging.basicConfig(level=level.upper(), handlers=[make_handler(fmt, stream)], force=True)
    library_level = logging.DEBUG if level.upper() == "DEBUG" else logging.WARNING
    for name in QUIET_LIBRARIES:
        library = logging.getLogger(name)
        library.setLevel(library_level)
        # Their records go to the handler above, not to a handler of their own.
        library.handlers.clear()
        library.propagate = True


__all__ = [
    "ACCESS_FIELDS",
    "LOG_FORMATS",
    "JsonFormatter",
    "RequestIdFilter",
    "configure_logging",
    "make_handler",
]

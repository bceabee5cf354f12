"""What a server loads before its first calendar or contact request.

Every worker imports ``oxidav.workers`` and builds ``make_app``. CalDAV and CardDAV (their
providers and reports, the calendar and contact rooms, the iCalendar and vCard libraries) are
loaded by the first request below their mount points (``oxidav.providers.dav.deferred``), so a
server whose users only keep files never holds them; SQLAlchemy's PostgreSQL dialect by the
first statement on PostgreSQL (``oxidav.db.upsert``, ``oxidav.db.base.partial_index``).
"""

from __future__ import annotations

import json
import subprocess
import sys

#: Loaded on first use only (each with what it pulls in): modules, by their full names.
ON_FIRST_USE = (
    "oxidav.calendars.store",
    "oxidav.contacts.store",
    "oxidav.providers.caldav.provider",
    "oxidav.providers.carddav.provider",
    "dateutil.rrule",
    "icalendar",
    "recurring_ical_events",
    "x_wr_timezone",
    "vobject",
    "sqlalchemy.dialects.postgresql",
)


def _loaded_after(program: str) -> set[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import json, sys\n{program}\nprint(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return {package for package in ON_FIRST_USE if package in json.loads(done.stdout)}


def test_a_server_starts_without_the_calendar_contact_and_postgresql_libraries() -> None:
    assert _loaded_after("import oxidav.workers, oxidav.cli") == set()


#: A server's app, built in a new data folder, and a WSGI call of it as alice.
SERVER = """
import base64, io, sys, tempfile
from pathlib import Path
from oxidav.app import make_app
from oxidav.bootstrap import prepare_storage
from oxidav.services import Services
from oxidav.settings import load_settings
from oxidav.authz.authn import accounts
settings = load_settings({"data_dir": Path(tempfile.mkdtemp()) / "data"})
services = Services.open(settings)
prepare_storage(settings, services.db, migrate_in_child=True)  # as a server does
accounts.create_user(services.db, "alice", "a long secret")
app = make_app(settings, services)
def call(method, path):
    environ = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
        "SERVER_NAME": "localhost", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(b""), "wsgi.errors": sys.stderr,
        "REMOTE_ADDR": "127.0.0.1", "CONTENT_LENGTH": "0", "HTTP_DEPTH": "0",
        "HTTP_AUTHORIZATION": "Basic " + base64.b64encode(b"alice:a long secret").decode(),
    }
    status = []
    body = app(environ, lambda s, h, e=None: status.append(s))
    b"".join(body)
    getattr(body, "close", lambda: None)()
    assert status[0].startswith("207"), (path, status)
"""


def test_a_server_serving_files_never_loads_calendars_or_contacts() -> None:
    program = SERVER + 'call("PROPFIND", "/remote.php/dav/files/alice/")\n'
    program += 'call("PROPFIND", "/remote.php/dav/principals/users/alice/")\n'
    assert _loaded_after(program) == set()


def test_the_first_calendar_request_loads_caldav_and_not_carddav() -> None:
    program = SERVER + 'call("PROPFIND", "/remote.php/dav/calendars/alice/")\n'
    loaded = _loaded_after(program)
    assert {"oxidav.calendars.store", "oxidav.providers.caldav.provider"} <= loaded
    assert "oxidav.providers.carddav.provider" not in loaded
    assert "oxidav.contacts.store" not in loaded


def test_the_first_calendar_and_contact_work_loads_them() -> None:
    program = (
        "from oxidav.calendars.validation import validate_object\n"
        "from oxidav.contacts.vcard import parse_vcards\n"
        "validate_object(b'BEGIN:VCALENDAR\\r\\nVERSION:2.0\\r\\nPRODID:-//t//t//EN\\r\\n"
        "BEGIN:VEVENT\\r\\nUID:u1\\r\\nDTSTAMP:20260101T000000Z\\r\\n"
        "DTSTART:20260101T100000Z\\r\\nRRULE:FREQ=DAILY;COUNT=3\\r\\nEND:VEVENT\\r\\n"
        "END:VCALENDAR\\r\\n', allowed_components={'VEVENT'}, max_size=1 << 20)\n"
        "parse_vcards('BEGIN:VCARD\\r\\nVERSION:4.0\\r\\nUID:c1\\r\\nFN:A\\r\\nEND:VCARD\\r\\n')"
    )
    assert _loaded_after(program) >= {"icalendar", "recurring_ical_events", "vobject"}

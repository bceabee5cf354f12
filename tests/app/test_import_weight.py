"""What a server loads before its first calendar or contact request.

Every worker imports ``oxidav.workers`` (the server, ``make_app`` and every room it wires);
the iCalendar and vCard libraries are loaded by the first request that needs them, so a
server whose users only keep files never holds them.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: Loaded on first use only (each with what it pulls in).
ON_FIRST_USE = ("icalendar", "recurring_ical_events", "x_wr_timezone", "vobject")


def _loaded_after(program: str) -> set[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import json, sys\n{program}\n"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(done.stdout)) & set(ON_FIRST_USE)


def test_a_server_starts_without_the_calendar_and_contact_libraries() -> None:
    assert _loaded_after("import oxidav.workers, oxidav.cli") == set()


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

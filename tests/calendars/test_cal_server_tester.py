"""caldav-server-tester (python-caldav's server prober, about 80 features) against oxidav,
compared with a checked-in baseline, as Radicale's caldav_compat_tests do: any change, better
or worse, shows up here. SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TESTER = Path(sys.executable).with_name("caldav-server-tester")

#: What the tester reports beyond its expectations. Only scheduling (RFC 6638) is missing;
#: the comp-type-optional "unsupported" values are the RFC 4791 §9.7 behaviour (a time-range
#: or component prop-filter directly under VCALENDAR is refused, as SabreDAV does); the '@'
#: spellings are aliases (lenient); well-known is not probed on localhost.
BASELINE = {
    "auth.www-authenticate": "full",
    "auth.www-authenticate.usable-scheme": "full",
    "calendar-color": "full",
    "calendar-color.name": "full",
    "calendar-order": "full",
    "save.no-uid-conflict": "full",
    "scheduling": "unsupported",
    "search.text.comp-type-optional": "unsupported",
    "search.time-range.comp-type-optional": "unsupported",
    "synchronous-write": "full",
    "url.encode-at.encoded": "full",
    "url.encode-at.identity": "unsupported",
    "url.encode-at.literal.collection": "full",
    "url.encode-at.literal.object": "full",
    "url.encode-at.literal.principal": "unknown",
    "well-known": "unknown",
}


@pytest.mark.skipif(not TESTER.exists(), reason="caldav-server-tester is not installed")
def test_caldav_server_tester_matches_baseline(live_server) -> None:
    result = subprocess.run(
        [
            str(TESTER),
            "--caldav-url",
            live_server.base_url + "/",
            "--caldav-username",
            "alice",
            "--caldav-password",
            "secret",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report, _ = json.JSONDecoder().raw_decode(result.stdout)
    observed = {name: value.get("support") for name, value in report["features"].items()}
    assert observed == BASELINE, result.stderr[-3000:]

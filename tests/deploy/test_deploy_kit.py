"""The deployment kit in ``deploy/`` does what it says: the systemd unit verifies and is
hardened, the command lines of the unit and of the container image start a real server on an
empty data dir and stop it gracefully, the container's health check passes against it, and
every ``OXIDAV_*`` variable the kit sets names a real setting.

No container runtime runs on the test machine (no daemon, no registry for base images), so the
image itself is not built here; its entrypoint, environment and health check are run as the
image would run them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from oxidav.settings import ENV_PREFIX, Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNIT = DEPLOY / "systemd" / "oxidav.service"
CONTAINERFILE = DEPLOY / "container" / "Containerfile"
OXIDAV = str(Path(sys.executable).with_name("oxidav"))


def _unit_value(key: str) -> str:
    for line in UNIT.read_text().splitlines():
        if line.startswith(f"{key}="):
            return line.split("=", 1)[1]
    raise AssertionError(f"{key} not in the unit")


def _serve_and_stop(argv: list[str], env: dict[str, str]) -> str:
    """Start ``argv`` (an ``oxidav serve``), wait for its URL, SIGTERM it: exit 0."""
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout is not None
    url = ""
    for line in process.stdout:
        match = re.search(r"listening on (http://[^/]+)/", line)
        if match:
            url = match.group(1)
            break
    try:
        assert url, process.stderr.read() if process.stderr else ""
        with urllib.request.urlopen(url + "/healthz", timeout=10) as answer:
            assert answer.status == 200
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    assert code == 0
    return url


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_the_systemd_unit_verifies_and_is_hardened(tmp_path: Path) -> None:
    unit = tmp_path / "oxidav.service"
    unit.write_text(UNIT.read_text().replace("/opt/oxidav/bin/oxidav", OXIDAV))
    verified = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True
    )
    assert verified.returncode == 0, verified.stderr
    assert verified.stderr.strip() == ""
    security = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", str(unit)],
        capture_output=True,
        text=True,
    )
    level = re.search(r"Overall exposure level for oxidav.service: ([0-9.]+)", security.stdout)
    assert level is not None, security.stdout + security.stderr
    assert float(level.group(1)) <= 2.5  # systemd's "OK" band
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ReadWritePaths": "/var/lib/oxidav",
        "DynamicUser": "yes",
        "KillSignal": "SIGTERM",
    }.items():
        assert _unit_value(key) == value


def test_the_units_command_line_serves_and_stops_gracefully(tmp_path: Path) -> None:
    argv = shlex.split(_unit_value("ExecStart"))
    assert argv[0] == "/opt/oxidav/bin/oxidav"
    data = tmp_path / "var-lib-oxidav"  # does not exist yet, as on a new machine
    argv = [OXIDAV if a == argv[0] else a.replace("/var/lib/oxidav", str(data)) for a in argv]
    argv[argv.index("--port") + 1] = "0"
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    _serve_and_stop(argv, {**env, "OXIDAV_ADMIN_PASSWORD": "unit-test"})
    assert (data / "oxidav.db").is_file()
    assert data.stat().st_mode & 0o777 == 0o700


def test_the_containers_entrypoint_and_health_check(tmp_path: Path) -> None:
    text = CONTAINERFILE.read_text()
    entrypoint = re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M)
    assert entrypoint is not None
    argv = [str(a) for a in json.loads(entrypoint.group(1))]  # exec form: a JSON array
    assert argv[0] == "/opt/oxidav/bin/oxidav"
    env_block = re.search(r"^ENV (.*?)(?:\n(?!\s)|\Z)", text, re.M | re.S)
    assert env_block is not None
    image_env = dict(re.findall(r"(\w+)=(\S+)", env_block.group(1)))
    assert image_env["OXIDAV_HOST"] == "0.0.0.0"
    data = tmp_path / "data"
    data.mkdir(mode=0o700)  # the image creates /data, owned by its user
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    env.update(image_env)
    env.update(OXIDAV_DATA_DIR=str(data), OXIDAV_HOST="127.0.0.1", OXIDAV_PORT="0")
    url = _serve_and_stop([OXIDAV, *argv[1:]], env)
    check = re.search(r'CMD python -c "(.*?)"', text)
    assert check is not None
    assert "'http://127.0.0.1:8080' + os.environ.get('OXIDAV_BASE_PATH'" in check.group(1)
    assert "'/healthz'" in check.group(1)
    assert url.startswith("http://127.0.0.1:")


def test_every_variable_the_kit_sets_is_a_setting() -> None:
    names = {f"{ENV_PREFIX}{f.name.upper()}" for f in dataclasses.fields(Settings)}
    used: set[str] = set()
    for path in [*DEPLOY.rglob("*"), ROOT / "docs" / "deployment.md"]:
        if path.is_file():
            used |= set(re.findall(r"\bOXIDAV_[A-Z0-9_]+", path.read_text()))
    assert used, "the kit sets no variable?"
    assert used <= names, sorted(used - names)

"""``oxidav config show``, the unknown-variable warning and ``serve --help``, run as an operator
runs them (a real process, a real oxidav.toml)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from oxidav.settings import Settings, unknown_env_warnings
from oxidav.settings_report import mask_url

KEY = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="  # 32 bytes, base64


def oxidav(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OXIDAV_")}
    return subprocess.run(
        [sys.executable, "-m", "oxidav.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **(env or {})},
    )


def shown(stdout: str) -> dict[str, tuple[str, str]]:
    """{name: (value text, source)} from ``config show``."""
    found = {}
    for line in stdout.splitlines():
        name, rest = line.split(" = ", 1)
        value, source = rest.rsplit("  # ", 1)
        found[name] = (value, source)
    return found


def test_config_show_tells_each_source_and_masks_secrets(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    toml = data / "oxidav.toml"
    toml.write_text(
        'threads = 7\nadmin_password = "file-secret"\n'
        f'encryption_keys = ["{KEY}"]\n'
        'blob_store = "s3://AKIDX:s3-secret@bucket/p?endpoint_url=http://h:9000&'
        'aws_secret_access_key=q-secret"\n'
    )
    result = oxidav(
        "config",
        "show",
        "--data-dir",
        str(data),
        env={
            "OXIDAV_DATABASE_URL": "postgresql://oxi:db-secret@db.example:5432/oxidav",
            "OXIDAV_LOG_FORMAT": "json",
        },
    )
    assert result.returncode == 0, result.stderr
    for secret in ("file-secret", KEY, "s3-secret", "q-secret", "db-secret"):
        assert secret not in result.stdout + result.stderr
    values = shown(result.stdout)
    assert set(values) == {f.name for f in dataclasses.fields(Settings)}
    assert values["threads"] == ("7", f"file {toml}")
    assert values["admin_password"] == ('"****"', f"file {toml}")
    assert values["encryption_keys"] == ('["****"]', f"file {toml}")
    assert values["database_url"] == (
        '"postgresql://oxi:****@db.example:5432/oxidav"',
        "env OXIDAV_DATABASE_URL",
    )
    assert values["blob_store"][0].startswith('"s3://AKIDX:****@bucket/p?endpoint_url=http')
    assert values["log_format"] == ('"json"', "env OXIDAV_LOG_FORMAT")
    assert values["data_dir"] == (f'"{data}"', "flag --data-dir")
    assert values["port"] == ("8080", "default")


def test_unknown_variable_is_a_warning_naming_the_closest_key(tmp_path: Path) -> None:
    result = oxidav(
        "config",
        "show",
        "--data-dir",
        str(tmp_path),
        env={"OXIDAV_LOG_LEVL": "DEBUG", "OXIDAV_NOTHING_LIKE_IT": "1"},
    )
    assert result.returncode == 0
    assert (
        "oxidav: warning: unknown environment variable OXIDAV_LOG_LEVL is ignored; "
        "did you mean OXIDAV_LOG_LEVEL?"
    ) in result.stderr
    assert "OXIDAV_NOTHING_LIKE_IT is ignored\n" in result.stderr
    assert shown(result.stdout)["log_level"] == ('"INFO"', "default")
    # The test suite's own switches are not settings and not warned about.
    assert unknown_env_warnings({"OXIDAV_TEST_BACKENDS": "pg", "OXIDAV_REQUIRE_PG": "1"}) == []
    assert unknown_env_warnings({"OXIDAV_log_level": "DEBUG"}) == []


def test_bad_setting_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = oxidav(
        "config", "show", "--data-dir", str(tmp_path), env={"OXIDAV_METRICS_ALLOW": "10.0.0.0/33"}
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "oxidav: invalid setting 'metrics_allow': '10.0.0.0/33' is not an IP address or CIDR"
    ]
    result = oxidav("config", "show", "--data-dir", str(tmp_path), env={"OXIDAV_LOG_FORMAT": "x"})
    assert (result.returncode, result.stderr.strip()) == (
        2,
        "oxidav: invalid setting 'log_format': must be text or json",
    )


def test_serve_help_lists_every_setting_with_its_variable() -> None:
    result = oxidav("serve", "--help")
    assert result.returncode == 0
    for field in dataclasses.fields(Settings):
        assert f"  {field.name} / OXIDAV_{field.name.upper()}  (" in result.stdout, field.name
    assert "Addresses / CIDRs whose direct requests may read ``/metrics``" in result.stdout


def test_mask_url() -> None:
    assert mask_url("") == ""
    assert mask_url("sqlite:////data/oxidav.db") == "sqlite:////data/oxidav.db"
    assert mask_url("postgresql://u:p@h/d") == "postgresql://u:****@h/d"
    assert mask_url("postgresql://token@h/d") == "postgresql://****@h/d"
    assert (
        mask_url("s3://b/p?region=x&session_token=t&concurrency=4")
        == "s3://b/p?region=x&session_token=****&concurrency=4"
    )

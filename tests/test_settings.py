"""Settings layering and validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from oxidav.settings import SettingsError, load_settings


def test_layers_in_order(tmp_path: Path) -> None:
    (tmp_path / "oxidav.toml").write_text('port = 9000\nthreads = 3\nhost = "0.0.0.0"\n')
    settings = load_settings(
        {"data_dir": tmp_path, "port": 9002},
        env={"OXIDAV_PORT": "9001", "OXIDAV_THREADS": "4"},
    )
    assert settings.port == 9002  # flag beats env beats file
    assert settings.threads == 4  # env beats file
    assert settings.host == "0.0.0.0"  # file beats default
    assert settings.data_dir == tmp_path.absolute()


def test_defaults_derive_from_data_dir(tmp_path: Path) -> None:
    settings = load_settings({"data_dir": tmp_path}, env={})
    assert settings.resolved_database_url == f"sqlite:///{tmp_path / 'oxidav.db'}"
    assert settings.resolved_blob_store == (tmp_path / "blobs").as_uri()


def test_data_dir_from_environment_locates_config(tmp_path: Path) -> None:
    (tmp_path / "oxidav.toml").write_text("threads = 7\n")
    settings = load_settings({}, env={"OXIDAV_DATA_DIR": str(tmp_path)})
    assert settings.threads == 7


@pytest.mark.parametrize(
    ("flags", "env", "toml", "key"),
    [
        ({"port": 70000}, {}, "", "port"),
        ({}, {"OXIDAV_PORT": "eighty"}, "", "port"),
        ({}, {}, "threads = 0\n", "threads"),
        ({}, {}, "colour = 1\n", "colour"),
        ({}, {}, 'database_url = "mysql://x"\n', "database_url"),
        ({}, {}, 'blob_store = "ftp://x"\n', "blob_store"),
        ({}, {}, 'encryption_keys = ["c2hvcnQ="]\n', "encryption_keys"),
        ({}, {}, 'log_level = "LOUD"\n', "log_level"),
        ({}, {"OXIDAV_SQLITE_SYNCHRONOUS": "off"}, "", "sqlite_synchronous"),
    ],
)
def test_invalid_settings_name_the_key(
    tmp_path: Path, flags: dict[str, object], env: dict[str, str], toml: str, key: str
) -> None:
    (tmp_path / "oxidav.toml").write_text(toml)
    with pytest.raises(SettingsError) as info:
        load_settings({"data_dir": tmp_path, **flags}, env=env)
    message = str(info.value)
    assert f"'{key}'" in message
    assert "\n" not in message


def test_broken_toml_is_a_settings_error(tmp_path: Path) -> None:
    (tmp_path / "oxidav.toml").write_text("port = = 1\n")
    with pytest.raises(SettingsError, match="invalid config file"):
        load_settings({"data_dir": tmp_path}, env={})


def test_explicit_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings({"data_dir": tmp_path}, env={}, config_file=tmp_path / "nope.toml")

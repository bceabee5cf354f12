"""Packaging: every imported package is declared, and ``pip install oxidav`` without extras
serves the embedded default (SQLite + local blobs) while naming the extra for a backend it
lacks.

The fresh-venv test builds oxidav from a copy of its sources (no build output in the checkout)
into a new virtual environment, as a user's ``pip install oxidav`` would; pip takes the
dependencies from its configured indexes and wheel cache.
"""

from __future__ import annotations

import ast
import base64
import http.client
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: Where each optional top-level module may be imported from (module -> extra).
OPTIONAL_IN = {"boto3": "s3", "botocore": "s3"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        match = re.match(r"[A-Za-z0-9._-]+", requirement)
        assert match, requirement
        names.add(_normal(match.group(0)))
    return names


def _imports(folder: Path) -> dict[str, set[Path]]:
    """Top-level modules imported (absolute imports) at run time by the .py files under
    ``folder`` (``if TYPE_CHECKING:`` blocks left out)."""
    found: dict[str, set[Path]] = {}
    for path in folder.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
            for statement in node.body
            for inner in ast.walk(statement)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".", 1)[0], set()).add(path)
    return found


def _third_party(folder: Path) -> dict[str, set[Path]]:
    local = {p.stem for p in ROOT.rglob("*.py") if ".venv" not in p.parts} | {
        p.name for p in ROOT.iterdir() if p.is_dir()
    }
    return {
        name: paths
        for name, paths in _imports(folder).items()
        if name not in sys.stdlib_module_names and name not in local and name != "__future__"
    }


def _distributions(module: str) -> set[str]:
    return {_normal(d) for d in importlib.metadata.packages_distributions().get(module, [])}


def test_every_import_of_oxidav_is_declared() -> None:
    runtime = _requirement_names(PYPROJECT["project"]["dependencies"])
    extras = {
        extra: _requirement_names(reqs)
        for extra, reqs in PYPROJECT["project"]["optional-dependencies"].items()
    }
    for module, paths in _third_party(ROOT / "oxidav").items():
        dists = _distributions(module)
        assert dists, f"{module} (imported by {sorted(map(str, paths))}) is not installed"
        if module in OPTIONAL_IN:
            extra = OPTIONAL_IN[module]
            assert dists & (extras[extra] | _dependencies_of(extras[extra])), (module, extra)
            continue
        assert dists & runtime, f"{module} ({dists}) is imported by oxidav but not a dependency"


def _dependencies_of(names: set[str]) -> set[str]:
    """The distributions ``names`` require (one level), for modules they bring."""
    found = set()
    for name in names:
        for requirement in importlib.metadata.requires(name) or []:
            if "extra ==" not in requirement:
                found |= _requirement_names([requirement])
    return found


def test_every_import_of_the_tests_is_in_the_test_extra() -> None:
    optional = PYPROJECT["project"]["optional-dependencies"]
    declared = _requirement_names(PYPROJECT["project"]["dependencies"])
    for extra in ("test", "postgres", "s3"):
        declared |= _requirement_names(optional[extra])
    for folder in ("tests", "bench", "examples"):
        for module, paths in _third_party(ROOT / folder).items():
            dists = _distributions(module)
            assert dists & (declared | _dependencies_of(declared & {"boto3"})), (
                f"{module} ({dists}) is imported by {sorted(map(str, paths))[:3]} "
                "but not declared in the test extra"
            )


def test_the_backends_are_extras_not_dependencies() -> None:
    runtime = _requirement_names(PYPROJECT["project"]["dependencies"])
    optional = PYPROJECT["project"]["optional-dependencies"]
    assert not runtime & {"boto3", "psycopg2-binary", "psycopg2"}
    assert _requirement_names(optional["postgres"]) == {"psycopg2-binary"}
    assert _requirement_names(optional["s3"]) == {"boto3"}
    assert "oxidav[postgres,s3]" in optional["test"]


def _run(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, env=env
    )


def test_plain_install_serves_sqlite_and_local_blobs(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "oxidav", source / "oxidav", ignore=shutil.ignore_patterns("__pycache__")
    )
    venv = tmp_path / "venv"
    made = _run(sys.executable, "-m", "venv", venv)
    assert made.returncode == 0, made.stderr
    installed = _run(venv / "bin" / "pip", "install", "-q", source)
    assert installed.returncode == 0, installed.stderr[-3000:]
    python, oxidav = venv / "bin" / "python", venv / "bin" / "oxidav"
    for module in ("boto3", "psycopg2"):
        assert _run(python, "-c", f"import {module}").returncode != 0, f"{module} was installed"
    # The settings' help is read from the installed sources' comments.
    helped = _run(oxidav, "serve", "--help")
    assert "  metrics_allow / OXIDAV_METRICS_ALLOW  (" in helped.stdout
    assert "Addresses / CIDRs whose direct requests may read" in helped.stdout

    env = {"PATH": "/usr/bin:/bin", "OXIDAV_ADMIN_PASSWORD": "pw-of-admin"}
    data = tmp_path / "data"
    process = subprocess.Popen(
        [oxidav, "serve", "--init", "--data-dir", data, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"listening on http://[^:]+:(\d+)/", line)
        assert match, (line, process.stderr and process.stderr.read())
        port = int(match.group(1))
        auth = {"Authorization": "Basic " + base64.b64encode(b"admin:pw-of-admin").decode()}
        content = bytes(range(256)) * 800  # 200 KiB: written to the local blob store
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("PUT", "/remote.php/dav/files/admin/f.bin", body=content, headers=auth)
        put = conn.getresponse()
        assert (put.status, put.read()) == (201, b"")
        conn.request("GET", "/remote.php/dav/files/admin/f.bin", headers=auth)
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (200, content)
        conn.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert any(p.is_file() for p in (data / "blobs").rglob("*") if ".tmp" not in p.parts)

    for setting, value, extra in (
        ("BLOB_STORE", "s3://bucket/prefix", "s3"),
        ("DATABASE_URL", "postgresql://oxidav@127.0.0.1:1/oxidav", "postgres"),
    ):
        failed = _run(
            oxidav, "serve", "--data-dir", tmp_path / extra, env={**env, f"OXIDAV_{setting}": value}
        )
        assert failed.returncode == 2, failed.stderr
        assert failed.stderr.strip().splitlines() == [
            f"oxidav: setting {setting.lower()!r} names "
            + ("an S3 bucket" if extra == "s3" else "PostgreSQL")
            + f", whose Python package is not installed: pip install 'oxidav[{extra}]'"
        ]

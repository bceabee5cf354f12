"""Run litmus (the WebDAV conformance suite) against a URL and check every suite passed clean."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

SUITES = ("basic", "copymove", "props", "locks", "http")
SUMMARY = re.compile(r"summary for `(\w+)': of (\d+) tests run: (\d+) passed, (\d+) failed")

needs_litmus = pytest.mark.skipif(shutil.which("litmus") is None, reason="litmus is not installed")


def assert_litmus_passes(url: str, workdir: Path, *credentials: str) -> None:
    """litmus ``url`` [user password]: every test of every suite passes, with no warning."""
    result = subprocess.run(
        ["litmus", url, *credentials],
        env={**os.environ, "TESTS": " ".join(SUITES)},
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summaries = {m[0]: (int(m[1]), int(m[2]), int(m[3])) for m in SUMMARY.findall(result.stdout)}
    assert set(summaries) == set(SUITES), result.stdout[-3000:]
    for suite, (run, passed, failed) in summaries.items():
        assert failed == 0 and passed == run, (suite, result.stdout[-3000:])
    assert "WARNING" not in result.stdout, result.stdout

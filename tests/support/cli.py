"""Running the ``oxidav`` command line as a real process, for tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping


def run_oxidav(
    env: Mapping[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``oxidav ARGS`` with exactly ``env``; its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "oxidav.cli", *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )

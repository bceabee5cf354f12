"""The fuzz suite's server, seed data, settings profiles and the properties checked on every
example.

One in-process server per test module, on SQLite (a fuzz run explores inputs, not backends),
with users alice and bob and a small seeded tree (files, a calendar event, a card). Every
example goes through ``Fuzz.send``, which asserts the suite's properties:

- the answer is framed correctly and a second request on the same keep-alive connection is
  answered (``raw_http.exchange``); nothing is dropped;
- the status is not 5xx (but for the 502 RFC 4918 gives a COPY or MOVE to another namespace);
- the server still answers a normal request afterwards, and what the request touched still
  reads (PROPFIND allprop Depth:1 of alice's files and of the resources the test names);
- a refused request (4xx) changes nothing stored: a digest of the stored rows is the same
  before and after.

Profiles (hypothesis settings): ``ci`` (default; 30 examples a test, derandomized so CI is
reproducible), ``explore`` (``ci`` without the pinned ``@example`` reproducers, to look past a
known failure) and ``long`` (random; 2000 examples a test, or ``OXIDAV_FUZZ_EXAMPLES``). The
profile is ``OXIDAV_FUZZ_PROFILE``, else ``long`` when the run selects the ``fuzz`` marker
(``pytest tests/fuzz -m fuzz``), else ``ci``: a default run (``-m "not slow"``) runs the suite
CI-sized.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from tests.support.fuzz import Fuzz
from tests.support.live import in_process_server, make_settings

settings.register_profile(
    "ci",
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "explore",
    parent=settings.get_profile("ci"),
    phases=[Phase.generate, Phase.target, Phase.shrink],
)
settings.register_profile(
    "long",
    max_examples=int(os.environ.get("OXIDAV_FUZZ_EXAMPLES", "2000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def pytest_configure(config: pytest.Config) -> None:
    markexpr = config.getoption("markexpr", "") or ""
    long_run = "fuzz" in markexpr and "not fuzz" not in markexpr
    settings.load_profile(os.environ.get("OXIDAV_FUZZ_PROFILE", "long" if long_run else "ci"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/fuzz is also a ``fuzz`` test: ``-m fuzz`` runs them (longer);
    the default ``-m "not slow"`` keeps the CI-sized run."""
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.fuzz)


@pytest.fixture(scope="module")
def fuzz(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzz]:
    """A live server for the module, on SQLite, with the seed data."""
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "oxidav.db"
    shutil.copyfile(sqlite_template, path)
    settings_ = make_settings(folder / "data", f"sqlite:///{path}")
    with in_process_server(settings_) as live:
        fuzz = Fuzz(live)
        fuzz.seed()
        yield fuzz

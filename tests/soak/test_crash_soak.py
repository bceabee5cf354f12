"""Crash soak: clients write over real HTTP while ``oxidav serve`` is SIGKILLed at random
(seeded) moments and restarted on the same data; after every round each acknowledged
operation is there exactly, an unanswered one is wholly done or wholly undone, no request
answers 5xx, ``blobs fsck --deep`` is clean and every content's reference count equals its
holders — on SQLite and PostgreSQL. CI runs a few rounds; ``-m slow`` the full soak
(``OXIDAV_SOAK_ROUNDS``, ``OXIDAV_SOAK_CLIENTS``, ``OXIDAV_SOAK_SEED`` size and seed it).
"""

from __future__ import annotations

import os

import pytest

from oxidav.db import Database
from tests.support.soak.references import reference_mismatches
from tests.support.soak.runner import Soak, Stats, oxidav


def assert_store_consistent(env: dict[str, str]) -> None:
    """``blobs fsck --deep`` is clean and every content's refcount equals its holders."""
    fsck = oxidav(env, "blobs", "fsck", "--deep")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert fsck.stdout.strip().endswith("clean"), fsck.stdout
    db = Database.from_url(env["OXIDAV_DATABASE_URL"])
    try:
        assert reference_mismatches(db) == []
    finally:
        db.dispose()


def soak(env: dict[str, str], clients: int, rounds: int, seed: int) -> Stats:
    runner = Soak(env, clients=clients, rounds=rounds, seed=seed)
    try:
        # After each kill, before the restart: the store as the killed server left it.
        stats = runner.run(after_round=lambda _round: assert_store_consistent(env))
    finally:
        for server in runner.servers:
            if server.process.poll() is None:
                server.process.kill()
                server.process.wait()
    print(
        f"\nsoak: {stats.rounds} rounds, {stats.kills} kills, {stats.requests} requests, "
        f"{stats.acknowledged} acknowledged operations, {stats.uncertain} unanswered "
        f"({stats.uncertain_applied} of them applied), {len(stats.problems)} problems"
        f"\nacknowledged by kind: {dict(sorted(stats.by_kind.items()))}"
    )
    assert not stats.problems, "\n".join(stats.problems)
    assert_store_consistent(env)
    return stats


def test_crash_soak_small(env: dict[str, str]) -> None:
    stats = soak(env, clients=4, rounds=3, seed=26)
    assert stats.kills == 4 and stats.acknowledged > 0


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_crash_soak_full(env: dict[str, str]) -> None:
    rounds = int(os.environ.get("OXIDAV_SOAK_ROUNDS", "30"))
    clients = int(os.environ.get("OXIDAV_SOAK_CLIENTS", "8"))
    seed = int(os.environ.get("OXIDAV_SOAK_SEED", "2026"))
    stats = soak(env, clients=clients, rounds=rounds, seed=seed)
    assert stats.kills == rounds + 1

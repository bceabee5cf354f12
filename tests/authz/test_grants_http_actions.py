"""The questions each WebDAV method asks of the grant engine."""

from __future__ import annotations

import pytest

from oxidav.authz.grants.roles import Action
from oxidav.authz.http_actions import On, Question, questions

A = Action

T, TP, D, DP = On.TARGET, On.TARGET_PARENT, On.DESTINATION, On.DESTINATION_PARENT


@pytest.mark.parametrize(
    ("method", "options", "asked"),
    [
        ("GET", {"target_exists": True}, [(A.READ, T)]),
        ("HEAD", {"target_exists": True}, [(A.READ, T)]),
        ("REPORT", {"target_exists": True}, [(A.READ, T)]),
        ("PROPFIND", {"target_exists": True}, [(A.READ, T)]),
        ("PROPFIND", {"target_exists": True, "depth": "1"}, [(A.LIST, T)]),
        ("PUT", {"target_exists": True}, [(A.WRITE, T)]),
        ("PUT", {"target_exists": False}, [(A.CREATE, TP)]),
        ("MKCOL", {"target_exists": False}, [(A.CREATE, TP)]),
        ("MKCALENDAR", {"target_exists": False}, [(A.CREATE, TP)]),
        ("DELETE", {"target_exists": True}, [(A.DELETE, T)]),
        ("PROPPATCH", {"target_exists": True}, [(A.PROPPATCH, T)]),
        ("LOCK", {"target_exists": True}, [(A.LOCK, T)]),
        ("LOCK", {"target_exists": False}, [(A.CREATE, TP)]),
        ("UNLOCK", {"target_exists": True}, [(A.LOCK, T)]),
        ("MOVE", {"target_exists": True}, [(A.MOVE_OUT, T), (A.MOVE_IN, DP)]),
        (
            "MOVE",
            {"target_exists": True, "destination_exists": True},
            [(A.MOVE_OUT, T), (A.MOVE_IN, DP), (A.DELETE, D)],
        ),
        ("COPY", {"target_exists": True}, [(A.COPY, T), (A.CREATE, DP)]),
        (
            "COPY",
            {"target_exists": True, "destination_exists": True},
            [(A.COPY, T), (A.CREATE, DP), (A.DELETE, D)],
        ),
        ("POST", {"target_exists": True}, [(A.WRITE, T)]),  # unknown: treated as a write
    ],
)
def test_questions(method: str, options: dict, asked: list) -> None:
    assert questions(method, **options) == tuple(Question(a, on) for a, on in asked)

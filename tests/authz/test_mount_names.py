"""``grants.mount_names.assign_names``: which name each mount gets, and what is stored."""

from __future__ import annotations

from datetime import UTC, datetime

from oxidav.authz.grants.mount_names import StoredName, assign_names, candidate
from oxidav.tree.names import MAX_NAME_CHARS
from oxidav.tree.types import NodeInfo

NOW = datetime(2026, 12, 4, tzinfo=UTC)


def node(node_id: int, owner_id: int, name: str, is_folder: bool = True) -> NodeInfo:
    return NodeInfo(node_id, owner_id, 1, name, "/" + name, is_folder, 0, NOW, NOW, "e", None,
                    None, "", None)  # fmt: skip


def test_stored_names_are_kept_and_new_ones_take_the_next_free() -> None:
    alice, carol = node(9, 1, "Proj"), node(3, 3, "Proj")
    stored = {9: StoredName(1, 1, "Proj")}
    names, plan = assign_names([(alice, "alice"), (carol, "carol")], stored, set())
    assert names == {9: "Proj", 3: "Proj (2)"}
    assert plan.upserts == [(3, 3, "Proj (2)")] and plan.stale == []


def test_first_sight_uses_name_then_node_id_order() -> None:
    alice, carol = node(9, 1, "Proj"), node(3, 3, "Proj")
    names, plan = assign_names([(alice, "alice"), (carol, "carol")], {}, {"Proj"})
    assert names == {3: "Proj (2)", 9: "Proj (3)"}
    assert len(plan.upserts) == 2


def test_an_own_node_holding_a_stored_name_moves_the_mount() -> None:
    """As Nextcloud's verifyMountPoint: the own node keeps the name, the mount moves on."""
    alice = node(9, 1, "Proj")
    names, plan = assign_names([(alice, "alice")], {9: StoredName(1, 1, "Work")}, {"Work"})
    assert names == {9: "Work (2)"} and plan.upserts == [(9, 1, "Work (2)")]


def test_the_older_of_two_rows_with_one_name_keeps_it() -> None:
    a, b = node(9, 1, "X"), node(5, 2, "Y")
    stored = {9: StoredName(7, 1, "Z"), 5: StoredName(2, 2, "Z")}
    names, _ = assign_names([(a, "alice"), (b, "bob")], stored, set())
    assert names == {5: "Z", 9: "Z (2)"}


def test_rows_of_departed_shares_and_reused_ids_are_replaced() -> None:
    a = node(9, 1, "Proj")
    stored = {9: StoredName(1, 4, "Old"), 8: StoredName(2, 1, "Gone")}
    names, plan = assign_names([(a, "alice")], stored, set())
    assert names == {9: "Proj"} and plan.upserts == [(9, 1, "Proj")] and plan.stale == [8]


def test_collision_names_never_exceed_the_name_limit() -> None:
    assert len(candidate("a" * MAX_NAME_CHARS, True, 2)) == MAX_NAME_CHARS
    long_file = candidate("b" * (MAX_NAME_CHARS - 4) + ".txt", False, 12)
    assert len(long_file) == MAX_NAME_CHARS and long_file.endswith(" (12).txt")
    assert candidate("a.txt", False, 2) == "a (2).txt"

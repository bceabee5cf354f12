"""The rooms of ``oxidav`` import each other only downwards, as ``docs/architecture.md`` says.

The layers are read from the fenced ``layers`` block of that document, the imports from the
source with ``ast`` (imports under ``TYPE_CHECKING`` are for the type checker only and do not
count). A room is a top-level package or module of ``oxidav``, or a subpackage of
``oxidav.providers`` or ``oxidav.authz``; every command-line module (``cli.py``, ``*_cli.py``)
belongs to the ``oxidav.cli`` room, since commands wire rooms together as ``make_app`` does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "oxidav"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
ROOMS_WITH_SUBROOMS = ("oxidav.providers", "oxidav.authz")


def layers() -> list[list[str]]:
    """The rooms of each layer, lowest first."""
    block = re.search(r"```layers\n(.*?)```", ARCHITECTURE.read_text(), re.S)
    assert block, "docs/architecture.md has no ```layers block"
    found = []
    for line in block.group(1).splitlines():
        if ":" in line:
            found.append(line.split(":", 1)[1].split())
    return found


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    path = ROOT / name.replace(".", "/")
    return path.is_dir() or path.with_suffix(".py").exists()


def room_of(module: str) -> str:
    parts = module.split(".")
    if parts[-1] == "cli" or parts[-1].endswith("_cli"):
        return "oxidav.cli"
    if len(parts) == 1:
        return module
    top = ".".join(parts[:2])
    subroom = ROOT / top.replace(".", "/") / parts[2] if len(parts) >= 3 else None
    if top in ROOMS_WITH_SUBROOMS and subroom is not None and subroom.is_dir():
        return f"{top}.{parts[2]}"
    return top


def type_checking_nodes(tree: ast.AST) -> set[int]:
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(inner) for inner in ast.walk(node))
    return hidden


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every runtime import of an ``oxidav`` module in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    hidden = type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("oxidav"):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if not node.module.startswith("oxidav"):
                continue
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                yield node.lineno, candidate if is_module(candidate) else node.module


def room_imports() -> dict[tuple[str, str], list[str]]:
    """(from room, to room) -> where, for every import between two different rooms."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = room_of(module_name(path))
        for line, target in imported_modules(path):
            target_room = room_of(target)
            if target_room != source:
                edges.setdefault((source, target_room), []).append(
                    f"{path.relative_to(ROOT)}:{line} imports {target}"
                )
    return edges


def test_every_room_is_in_exactly_one_layer() -> None:
    listed = [room for layer in layers() for room in layer]
    assert len(listed) == len(set(listed)), "a room is listed twice"
    rooms = {room_of(module_name(path)) for path in PACKAGE.rglob("*.py")}
    assert sorted(rooms - set(listed)) == [], "rooms missing from docs/architecture.md"
    assert sorted(set(listed) - rooms) == [], "docs/architecture.md lists rooms that do not exist"


def test_rooms_import_only_their_own_layer_or_lower() -> None:
    level = {room: index for index, layer in enumerate(layers()) for room in layer}
    upward = [
        where
        for (source, target), places in room_imports().items()
        if source in level and target in level and level[target] > level[source]
        for where in places
    ]
    assert upward == []


def test_the_room_graph_has_no_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for source, target in room_imports():
        graph.setdefault(source, set()).add(target)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(room: str) -> None:
        state[room] = 1
        path.append(room)
        for nxt in sorted(graph.get(room, ())):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                pytest.fail("rooms import each other: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[room] = 2

    for room in sorted(graph):
        if room not in state:
            visit(room)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: a domain module importing a provider is an upward edge."""
    assert room_of("oxidav.tree.cli") == "oxidav.cli"
    assert room_of("oxidav.providers.files.put") == "oxidav.providers.files"
    assert room_of("oxidav.authz.policy") == "oxidav.authz"
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nfrom oxidav.providers.files import put\n"
        "if TYPE_CHECKING:\n    from oxidav.app import make_app\n"
    )
    assert [name for _, name in imported_modules(module)] == ["oxidav.providers.files.put"]


def test_the_client_room_imports_no_server_room() -> None:
    """``oxidav.push`` runs on a machine without the server: it imports only itself."""
    reached = [
        where
        for (source, _target), places in room_imports().items()
        if source == "oxidav.push"
        for where in places
    ]
    assert reached == []

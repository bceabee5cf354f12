"""The tests' own layout: every helper lives in ``tests/support`` and is imported under one
name (``tests.support....``); no test module or conftest is imported by another module.
Computed with ``ast`` over ``tests/``, so a shortcut taken later fails here."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "support"


def python_files() -> list[Path]:
    return sorted(TESTS.rglob("*.py"))


def is_test_module(path: Path) -> bool:
    return path.name.startswith("test_") or path.name == "conftest.py"


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in ``path``; relative imports as ``.name``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found += [(node.lineno, module)]
            if node.module in (None, "tests") or node.level:
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def test_every_helper_lives_in_tests_support() -> None:
    outside = [
        str(path.relative_to(TESTS))
        for path in python_files()
        if not is_test_module(path)
        and path.name != "__init__.py"
        and not path.is_relative_to(SUPPORT)
    ]
    assert outside == []


def test_no_module_imports_a_test_module_or_a_helper_by_a_second_name() -> None:
    local_names = {path.stem for path in python_files()} - {"__init__"}
    wrong = []
    for path in python_files():
        for line, module in imported(path):
            last = module.rsplit(".", 1)[-1]
            is_test = last.startswith("test_") or last == "conftest"
            relative = module.startswith(".")
            bare_local = module.split(".", 1)[0] in local_names
            if is_test or relative or bare_local:
                wrong.append(f"{path.relative_to(TESTS)}:{line} imports {module}")
    assert wrong == []

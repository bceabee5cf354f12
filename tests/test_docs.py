"""The design is in the repository: every ``docs/<page>.md#<anchor>`` the code, tests, benchmarks
and README cite names a heading that exists, and nothing cites a document outside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CITED = re.compile(r"docs/([a-z-]+\.md)((?:#[a-z0-9-]+)(?:, #[a-z0-9-]+)*)?")
SOURCES = ["oxidav", "tests", "bench", "examples", "deploy", "docs", "README.md"]


def source_files() -> list[Path]:
    found: list[Path] = []
    for name in SOURCES:
        path = ROOT / name
        found += [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return [p for p in found if p.suffix in {".py", ".md", ".toml", ".yaml", ".service", ""}]


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of the headings of ``page``."""
    found = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^a-z0-9 -]", "", title).replace(" ", "-"))
    return found


def test_every_cited_page_and_anchor_exists() -> None:
    missing = []
    for path in source_files():
        text = path.read_text(errors="replace")
        for page, tail in CITED.findall(text):
            target = ROOT / "docs" / page
            if not target.exists():
                missing.append(f"{path.relative_to(ROOT)}: docs/{page}")
                continue
            for anchor in re.findall(r"#([a-z0-9-]+)", tail or ""):
                if anchor not in anchors(target):
                    missing.append(f"{path.relative_to(ROOT)}: docs/{page}#{anchor}")
    assert missing == []


def test_nothing_cites_a_design_document_outside_the_repository() -> None:
    outside = re.compile(r"DESIGN ?§|nextcloud_protocol\.md|wsgidav\.md ?§|\.\./shared/")
    found = [
        str(path.relative_to(ROOT))
        for path in source_files()
        if path.name != "test_docs.py" and outside.search(path.read_text(errors="replace"))
    ]
    assert found == []

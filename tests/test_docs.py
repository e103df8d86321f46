"""The README and docs/CONVENTIONS.md say true things about the repository, in Markdown that renders."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "docs" / "CONVENTIONS.md", ROOT / "docs" / "SCALE.md", ROOT / "docs" / "RESULTS_GEN1.md",
        ROOT / "docs" / "RESULTS_GEN2A.md", ROOT / "docs" / "RESULTS_GEN2C.md", ROOT / "docs" / "RESULTS.md"]
MODULES = sorted(str(p.relative_to(ROOT / "src" / "guimem").with_suffix("")).replace("/", ".")
                 for p in (ROOT / "src" / "guimem").rglob("*.py") if p.name != "__init__.py")


def tables(text: str) -> list[list[str]]:
    """Runs of consecutive lines starting with ``|``."""
    out, run = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            run.append(line)
        elif run:
            out.append(run)
            run = []
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_table_renders(doc):
    text = doc.read_text(encoding="utf-8")
    for table in tables(text):
        # (a table split by a blank line leaves a second part without a separator row)
        assert len(table) >= 2 and re.fullmatch(r"\|( *:?-+:? *\|)+", table[1].replace(" ", "")), (
            f"{doc.name}: a table must start with a header and a separator row: {table[0]!r}")
        width = table[0].count("|") - table[0].count("\\|")
        bad = [row for row in table if row.count("|") - row.count("\\|") != width]
        assert not bad, f"{doc.name}: rows with another number of cells than the header: {bad[:2]}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_docs_point_at_nothing_outside_the_repository(doc):
    text = doc.read_text(encoding="utf-8")
    assert "../" not in text and not re.search(r"(?<![\w.])/(home|work|tmp|root)/", text), (
        f"{doc.name} points outside the repository")


def test_conventions_list_every_module():
    text = (ROOT / "docs" / "CONVENTIONS.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z_.]+)` \|", text, re.M))
    assert sorted(set(MODULES) - listed) == [], "modules missing from docs/CONVENTIONS.md"
    assert sorted(m for m in listed - set(MODULES) if "." in m) == [], "docs/CONVENTIONS.md lists modules that do not exist"

"""Every committed notebook has its jupytext twin in step with it, and carries no outputs."""

from __future__ import annotations

import json
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = sorted(Path(__file__).resolve().parent.parent.glob("notebooks/**/*.ipynb"))


def _sources(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_ipynb_matches_its_py_twin(path: Path):
    twin = path.with_suffix(".py")
    assert twin.is_file(), f"{path} has no .py:percent twin"
    assert _sources(jupytext.read(path)) == _sources(jupytext.read(twin)), (
        f"{path.name} and {twin.name} differ: run `jupytext --sync {twin}`")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_no_outputs_and_one_parameters_cell(path: Path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert not any(c.get("outputs") or c.get("execution_count") for c in code), f"{path} carries outputs"
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{path}: expected one cell tagged 'parameters', found {len(tagged)}"
    assert nb["cells"][0]["cell_type"] == "markdown", f"{path}: the first cell must say what the stage does"

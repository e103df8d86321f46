"""Run a stage notebook on tiny parameters inside a test's ``tmp_path`` and return its metrics.

    from nbsmoke import run_notebook

    @pytest.mark.notebook
    def test_world_notebook_runs(tmp_path):
        metrics = run_notebook("00_world", tmp_path, n_train=12, n_test=6)
        assert metrics["episodes"] == 18

The notebook runs through :func:`guimem.pipeline.runner.run_notebook` (the same path as a
DVC stage) with ``tmp_path`` as its working directory, so every relative default path it
writes (``data/...``, ``figures/...``) lands in ``tmp_path`` and the repository is never
touched; a later stage's notebook run in the same ``tmp_path`` finds the earlier one's
outputs at their default paths. The metrics path parameter is pointed at
``tmp_path/metrics/<notebook>.json``. The executed notebook is kept at
``tmp_path/<notebook>.ipynb`` for a failing test to be read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from papermill.translators import papermill_translators

from guimem.pipeline.runner import KERNEL_NAME
from guimem.pipeline.runner import run_notebook as _run

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def notebook_parameters(path: Path) -> dict[str, str]:
    """The parameters cell's names and default values (as source text) of the notebook at ``path``."""
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not cells:
        raise ValueError(f"{path}: no cell is tagged 'parameters'")
    translator = papermill_translators.find_translator(KERNEL_NAME, "python")
    return {p.name: p.default for p in translator.inspect(cells[0])}


def metrics_parameter(path: Path) -> str:
    """The one parameter whose default is a ``metrics/*.json`` path (docs/CONVENTIONS.md)."""
    found = [name for name, default in notebook_parameters(path).items()
             if default.strip("'\"").startswith("metrics/") and default.strip("'\"").endswith(".json")]
    if len(found) != 1:
        raise ValueError(f"{path}: expected one parameter defaulting to 'metrics/<stage>.json', found {found}; "
                         "name it with metrics_param=")
    return found[0]


def run_notebook(name: str, tmp_path: Path, metrics_param: str | None = None, **params: Any) -> dict[str, Any]:
    """Run ``notebooks/<name>.ipynb`` in ``tmp_path`` with ``params``; return the metrics it wrote."""
    src = NOTEBOOKS / f"{name}.ipynb"
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such notebook")
    key = metrics_param or metrics_parameter(src)
    metrics_path = Path(tmp_path) / "metrics" / f"{name}.json"
    params.setdefault(key, str(metrics_path))
    _run(src, Path(tmp_path) / f"{name}.ipynb", params, cwd=tmp_path)
    written = Path(params[key])
    if not written.is_file():
        raise AssertionError(f"{src}: ran, but wrote no metrics at {written} (parameter '{key}')")
    metrics = json.loads(written.read_text(encoding="utf-8"))
    if not isinstance(metrics, dict):
        raise AssertionError(f"{written}: metrics must be a JSON object, got {type(metrics).__name__}")
    return metrics


def tiny_segmented_world(tmp_path: Path, n_train: int, n_test: int) -> Path:
    """A tiny world and its rule segmentation at the default paths under ``tmp_path``, as the
    ``world`` and ``segmentation`` stages would leave them (the start of every later smoke run)."""
    from guimem.core.store import load_episodes, save_subgoals
    from guimem.phone.config import WorldConfig
    from guimem.phone.demonstrator import generate_dataset
    from guimem.smg.judge import RuleJudge
    from guimem.smg.segment import make_segmenter, segment_episodes

    root = Path(tmp_path)
    generate_dataset(WorldConfig(n_train=n_train, n_test=n_test), root / "data" / "world", seed=0, progress=False)
    segmenter = make_segmenter("rule", RuleJudge())
    for split in ("train", "test"):
        episodes = load_episodes(root / "data" / "world" / split)
        save_subgoals(root / "data" / "segmentation" / f"{split}.jsonl", segment_episodes(episodes, segmenter, False))
    return root

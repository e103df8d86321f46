"""Recorded runs through the pipeline, as dvc runs it: 00_recorded imports the bundled sample (OCR,
both label files, a seeded split), 10_real_graph builds the graph on real screens, and
01_segmentation, 02_graph_build and 03_retrieval_eval run unchanged on the recorded stores (what
``base.episodes: recorded`` hands them)."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

import pytest
import yaml

from guimem.core.store import SPLITS, load_episodes

ROOT = Path(__file__).resolve().parents[1]
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text())
FAST = {"image_embedder": "pixels", "text_embedder": "hashing"}  # the stages' logic, not their models


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.skipif(find_spec("rapidocr_onnxruntime") is None, reason="rapidocr-onnxruntime is part of make setup")
def test_recorded_runs_through_the_pipeline(tmp_path):
    from nbsmoke import run_notebook

    sample = {k: str(ROOT / v) if k in ("source", "labels", "subgoal_labels") else v
              for k, v in PARAMS["recorded"].items()}
    out = run_notebook("00_recorded", tmp_path, **sample, seed=0)
    stores = {name: load_episodes(tmp_path / "data" / "recorded" / name) for name in SPLITS}
    assert sorted(e.id for part in stores.values() for e in part) == sorted(r["id"] for r in out["runs"])
    assert all(len(part) == 1 for part in stores.values())  # three runs, one each
    assert all(s.subgoal is not None for part in stores.values() for e in part for s in e.steps)
    assert (tmp_path / "figures" / "recorded_runs.png").stat().st_size > 5_000

    cache = {"cache_dir": str(tmp_path / "cache")}
    graph = run_notebook("10_real_graph", tmp_path, **{**PARAMS["real_graph"], **FAST, **cache})
    metrics = json.loads((tmp_path / "metrics" / "real_graph.json").read_text())
    assert metrics["episodes"] == 3 and metrics["steps"] == 28 and metrics["screen_types"] == 8
    assert 1 <= metrics["nodes"] <= metrics["screens"] and 0.0 <= metrics["purity"] <= 1.0
    assert [r["tau"] for r in graph["tau_sweep"]] == PARAMS["real_graph"]["tau_sweep"]
    assert 'answer "Call with Marketing"' in [s["text"] for s in graph["subgoals"]]  # the reply reaches memory
    scores = graph["boundaries"]["as imported (OCR)"]["tolerance 0"]
    assert scores["n_true"] == 16 - 3  # the 16 subgoals cut by hand: 13 boundaries after each run's first
    assert metrics["boundary_f1"] == round(scores["f1"], 4)
    assert set(graph["boundaries"]) == {"as imported (OCR)", "without elements"}
    for what in ("ocr", "nodes", "tau_sweep"):
        assert (tmp_path / "figures" / f"real_graph_{what}.png").stat().st_size > 5_000

    recorded = {"world_dir": "data/recorded"}
    seg = run_notebook("01_segmentation", tmp_path, **{**PARAMS["segmentation"], **recorded, "llm_sample": 0,
                                                       "text_embedder": "hashing", "embed_cache_dir": cache["cache_dir"]})
    truth = {name: sum(len({s.subgoal.index for s in e.steps}) - 1 for e in part) for name, part in stores.items()}
    assert {name: seg["scores"][name]["rule"]["n_true"] for name in SPLITS} == truth  # the hand-cut subgoals
    run_notebook("02_graph_build", tmp_path, **{**PARAMS["graph_build"], **recorded, **FAST, **cache, "pca_dim": 0,
                                                "embed_workers": 1})
    assert json.loads((tmp_path / "metrics" / "graph_build.json").read_text())["smg_purity"] is not None
    hits = run_notebook("03_retrieval_eval", tmp_path, **{**PARAMS["retrieval_eval"], **recorded, **FAST, **cache,
                                                          "embed_workers": 1})
    assert hits["steps"] == len(stores["test"][0].steps)  # every step of the recorded test run replayed
    assert json.loads((tmp_path / "metrics" / "retrieval_eval.json").read_text())["steps"] == hits["steps"]

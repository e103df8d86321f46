"""10_real_graph on one bundled real run (copied, with its labels): the import, OCR, subgoals and the
graph run through the notebook as dvc runs it, and what it writes is what the issue asks for."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from guimem.real.ocr import ocr_available

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "android_world_simple_calendar"
RUN = "What_is_my_next_upcoming_event_in_Simple_Calendar_"


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.skipif(not ocr_available(), reason="rapidocr-onnxruntime is part of make setup")
def test_real_graph_notebook(tmp_path):
    from nbsmoke import run_notebook

    shutil.copytree(SAMPLE / RUN, tmp_path / "runs" / RUN)
    labels = {RUN: json.loads((SAMPLE / "screen_labels.json").read_text())[RUN]}
    (tmp_path / "labels.json").write_text(json.dumps(labels))
    cuts = {RUN: json.loads((SAMPLE / "subgoal_labels.json").read_text())[RUN]}
    (tmp_path / "subgoals.json").write_text(json.dumps(cuts))
    params = yaml.safe_load((Path(__file__).parents[1] / "params.yaml").read_text())["real_graph"]
    out = run_notebook("10_real_graph", tmp_path, **{
        **params, "source": str(tmp_path / "runs"), "labels": str(tmp_path / "labels.json"),
        "subgoal_labels": str(tmp_path / "subgoals.json"),
        "image_embedder": "pixels", "text_embedder": "hashing", "cache_dir": str(tmp_path / "cache")})
    metrics = json.loads((tmp_path / "metrics" / "real_graph.json").read_text())
    assert metrics["episodes"] == 1 and metrics["steps"] == 6 and metrics["screen_types"] == 5
    assert 1 <= metrics["nodes"] <= metrics["screens"] and 0.0 <= metrics["purity"] <= 1.0
    assert [r["tau"] for r in out["tau_sweep"]] == params["tau_sweep"]
    assert out["subgoals"][-1]["text"] == 'answer "Call with Marketing"'  # the reply reaches memory
    scores = out["boundaries"]["as imported (OCR)"]["tolerance 0"]
    assert scores["n_true"] == 3 and metrics["boundary_f1"] == round(scores["f1"], 4)
    assert set(out["boundaries"]) == {"as imported (OCR)", "without elements"}
    assert (tmp_path / "data" / "real_graph" / "store" / "manifest.json").is_file()
    for what in ("ocr", "nodes", "tau_sweep"):
        assert (tmp_path / "figures" / f"real_graph_{what}.png").stat().st_size > 5_000

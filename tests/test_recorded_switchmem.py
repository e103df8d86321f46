"""SwitchMem's offline protocol on recorded steps, as the README runs it: ``dvc exp run`` with
``base.episodes=recorded`` and a tiny random LLaVA saved as a checkpoint folder takes the bundled
sample through 00_recorded, 01-03, 05 (its step-level score; no closed loop) and 06-09, in a copy of
the repository. Nothing is downloaded; the miniature actor is never trained."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OVERRIDES = ["base.episodes=recorded", "graph_build.pca_dim=0", "recorded.split=[0,1,2]", "recorded.ocr=false",
             "closed_loop.actor.actor_model=models/tiny_llava", "closed_loop.actor.max_new_tokens=8",
             "layer_analysis.k_folds=2", "layer_analysis.curve.folds=2"]  # the README's command, without OCR
TARGETS = ["layer_analysis", "probe_router", "oracle_headroom", "routing_stats"]


def _project(folder: Path) -> Path:
    """This repository's tracked files as they are in the working tree, in a new git repository."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, folder / name)
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "copy"], cwd=folder, check=True, env=_env())
    return folder


def _env() -> dict[str, str]:
    return {**os.environ, "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.com",
            "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.com", "DVC_NO_ANALYTICS": "1",
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.mark.slow
@pytest.mark.notebook
def test_dvc_exp_run_takes_switchmem_through_the_recorded_sample_with_a_vlm_folder(tmp_path):
    from guimem.actors.hf.tiny import save_tiny_random_llava
    from guimem.core.store import load_episodes
    from guimem.routing.records import StepRecords

    project = _project(tmp_path / "project")
    save_tiny_random_llava(str(project / "models" / "tiny_llava"), answer_scale=20, init_std=0.2)
    run = subprocess.run([sys.executable, "-m", "dvc", "exp", "run", *[a for o in OVERRIDES for a in ("-S", o)],
                          *TARGETS], cwd=project, env=_env(), capture_output=True, text=True, timeout=1200, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Running stage 'actor'" not in run.stdout and not (project / "reports" / "04_actor.ipynb").exists()
    assert not (project / "data" / "world").exists()  # the world is neither built nor read

    # 06: the recorded test steps, the recorded actions as the gold, the VLM's layers
    test = load_episodes(project / "data" / "recorded" / "test", verify_images=False)
    held = StepRecords.load(project / "data" / "layer_analysis" / "held_out")
    recorded = {(e.id, i): s.action.describe() for e in test for i, s in enumerate(e.steps)}
    smg = [r for r in held.rows if r["memory_kind"] == "smg"]
    assert {(r["episode_id"], r["step"]): r["target"] for r in smg} == recorded
    assert held.n_layers == 3 and held.d_model == 32 and set(held.rules) == {"aitw", "learngui"}
    pool = StepRecords.load(project / "data" / "layer_analysis" / "pool")
    memory = load_episodes(project / "data" / "recorded" / "memory", verify_images=False)
    assert {r["episode_id"] for r in pool.rows} == {e.id for e in memory} and len(memory) == 2

    results = {name: json.loads((project / "results" / f"{name}.json").read_text())
               for name in ("closed_loop", "probe_router", "routing_stats")}
    assert results["closed_loop"]["closed_loop"].startswith("skipped: these are recorded runs")
    assert set(results["closed_loop"]["action_score_aitw"]) == {"none", "text", "image", "both"}
    table = results["probe_router"]["tables"]["smg"]  # Table 1: both step rules, every condition
    assert set(table) == {"aitw", "learngui"}
    assert {"none", "text", "image", "both", "switchmem", "random", "oracle"} <= set(table["aitw"])
    assert results["routing_stats"]["closed_loop"].startswith("skipped")
    assert results["routing_stats"]["offline"]["smg"]["trajectories"] == len(test)
    for figure in ("closed_loop_smg_table", "routing_stats_closed_loop", "probe_router_table",
                   "oracle_headroom_headroom"):
        assert (project / "figures" / f"{figure}.png").stat().st_size > 0

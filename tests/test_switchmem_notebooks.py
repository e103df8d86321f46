"""The notebooks after the actor on a tiny world: 05_closed_loop and the four SwitchMem notebooks
(06_layer_analysis, 07_probe_router, 08_oracle_headroom, 09_routing_stats), on the actor 04 trained
there, with params.yaml's sections as dvc passes them on tiny sizes. The chain is built once per
session (tests/stage_chains.py); the tests read it."""

from __future__ import annotations

import numpy as np
import pytest

from guimem.core.store import load_episodes
from stage_chains import params


@pytest.mark.notebook
@pytest.mark.slow
def test_closed_loop_notebook(switchmem_chain):
    from guimem.eval.closed_loop import load_traces, stalled_share

    tmp, out = switchmem_chain
    stage, m = params("closed_loop"), out["05"]
    memories = stage["memories"]
    assert m["tasks"] == 2 and m["seeds"] == 2 and m["episodes"] == 2 * 2 * len(memories)
    assert set(m["success_rate"]) == set(memories)
    assert all(0.0 <= r["mean"] <= 100.0 and len(r["per_seed"]) == 2 for r in m["success_rate"].values())
    assert set(m["action_score_aitw"]) == set(stage["action_score_modalities"])
    traces = load_traces(tmp / "data" / "closed_loop" / "traces.jsonl")
    assert len(traces) == m["episodes"] and all(1 <= len(t.steps) <= 4 for t in traces)
    assert m["stalled_share"] == {n: round(v, 4) for n, v in stalled_share(traces, min_steps=5).items()}
    assert "| Subgoal-Graph |" in (tmp / "data" / "closed_loop" / "smg_table.md").read_text()
    for what in ("smg_table", "action_scores", "experience_worth"):
        assert (tmp / "figures" / f"closed_loop_{what}.png").stat().st_size > 5_000
    worth = m["experience_worth"]  # the same tasks and seeds on the training phones and with the oracle memory
    assert set(worth["success"]) == {"training phones", *memories, "oracle/text", "oracle/image"}
    assert all(r["episodes"] == 2 * 2 for r in worth["success"].values())
    assert set(worth["wrong_done_share"]) == set(worth["success"])
    assert all(0.0 <= v <= 1.0 for v in worth["wrong_done_share"].values())
    oracle = load_episodes(tmp / "data" / "closed_loop" / "oracle", verify_images=False)
    assert len(oracle) == 2 * 2 and all(e.provenance["demonstrator"] == "clean" for e in oracle)


@pytest.mark.notebook
@pytest.mark.slow
def test_layer_analysis_notebook(switchmem_chain):
    from guimem.routing.records import StepRecords

    tmp, out = switchmem_chain
    m = out["06"]
    held = StepRecords.load(tmp / "data" / "layer_analysis" / "held_out")
    steps = sum(len(e.steps) for e in load_episodes(tmp / "data" / "world" / "test"))
    assert m["steps"]["held_out"] == len(held) == 4 * steps  # every held-out step, once per memory
    assert held.n_layers == 6 and held.hidden["none"].shape == (len(held), 7, 32)
    first = m["layer_curve_cv"][0]  # layer 0: a zero shift; or every layer, when the tiny pool's steps all tie
    assert len(m["layer_curve_cv"]) == 7 and (first.get("constant") or "insufficient" in first)
    for key in ("smg/held_out/greedy", "smg/pool/sampled", "task_graph/held_out/sampled"):
        assert 0.0 <= m["modality_wins"][key]["non_tied_share"] <= 1.0
    for what in ("modality_wins", "layers"):
        assert (tmp / "figures" / f"layer_analysis_{what}.png").stat().st_size > 5_000
    assert (tmp / "plots" / "layer_analysis_layers.csv").read_text().startswith("layer,cv_auc")


@pytest.mark.notebook
@pytest.mark.slow
def test_probe_router_and_headroom_notebooks(switchmem_chain):
    from guimem.routing.router import Router

    tmp, out = switchmem_chain
    t = out["07"]["tables"]["smg"]["aitw"]
    assert set(out["07"]["baselines"]) == {"flat", "action_graph"}  # shown with the same actor, not routed
    assert {"none", "text", "image", "both", "switchmem", "random", "binary", "density", "oracle"} <= set(t)
    assert t["oracle"] >= max(t["text"], t["image"], t["switchmem"])
    assert 0.0 <= t["switchmem_image_rate"] <= 1.0 and set(out["07"]["tables"]["smg"]) == {"aitw", "learngui"}
    router = Router.load(tmp / "data" / "probe_router" / "smg")
    assert router.info["state_layer"] == -1 and np.isfinite(router.tau)
    h = out["08"]["headroom"]["smg/aitw"]
    assert h["oracle"] >= h["best_fixed_accuracy"] and h["switchmem"] == pytest.approx(t["switchmem"])
    assert set(out["08"]["where_image_helps"]) == {"UI density", "action category", "step position", "target"}
    for what in ("probe_router_table", "probe_router_rate_sweep", "oracle_headroom_headroom",
                 "oracle_headroom_where_image_helps"):
        assert (tmp / "figures" / f"{what}.png").stat().st_size > 5_000


@pytest.mark.notebook
@pytest.mark.slow
def test_routing_stats_notebook(switchmem_chain):
    from guimem.eval.closed_loop import load_traces

    tmp, out = switchmem_chain
    m = out["09"]
    assert set(m["success_rate"]) == {"none", "text", "image", "both", "switchmem"}
    closed = out["05"]["success_rate"]
    assert m["success_rate"]["none"] == closed["none"] and m["success_rate"]["text"] == closed["smg"]  # reused
    traces = load_traces(tmp / "data" / "routing_stats" / "traces.jsonl")
    assert len(traces) == 2 * 2 and all(s.shown in ("text", "image") for t in traces for s in t.steps)
    assert 0.0 <= m["closed_loop_routing"]["image_steps_pct"] <= 100.0
    assert m["offline"]["smg"]["trajectories"] == len(load_episodes(tmp / "data" / "world" / "test"))
    for what in ("table", "closed_loop"):
        assert (tmp / "figures" / f"routing_stats_{what}.png").stat().st_size > 5_000

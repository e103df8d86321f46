"""SwitchMem's recipe on step records (the probe, its out-of-fold teacher, the routers, their scores on
held-out steps) and routing along trajectories (the router's choices per episode, 05's traces reused),
on synthetic records whose preference is planted in the hidden states."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from guimem.core.data import Action, DataError
from guimem.eval.closed_loop import Trace, TraceStep, save_traces
from guimem.routing.route_scores import label_free_tau, routing_statistics
from guimem.routing.figures import table_one_figure
from guimem.routing.probe import PreferenceProbe, ProbeConfig, cross_validated_decisions
from guimem.routing.recipe import (
    TEACHER_FOLDS,
    fixed_baselines,
    score_routers,
    headroom_findings,
    switchmem_findings,
    train_routers,
)
from guimem.routing.records import StepRecords
from guimem.routing.router import RouterConfig, train_router
from guimem.routing.trajectories import condition_traces, reused_traces, routed_trajectories

torch.set_num_threads(1)
CONFIG = RouterConfig(hidden=8, epochs=30, seed=0)


def records(n_episodes: int = 12, per: int = 5, d: int = 6, kind: str = "smg", seed: int = 0) -> StepRecords:
    """Steps of one memory whose sampled preference (a quarter tied) is planted in the last layer's
    shift and in the memory-free state, with hits under both step rules."""
    rng = np.random.default_rng(seed)
    n = n_episodes * per
    sign = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    pref = np.where(rng.random(n) < 0.25, 0.0, 0.5 * sign)
    text = rng.normal(size=(n, 3, d)).astype(np.float32)
    image = (text + rng.normal(size=(n, 3, d)) + 2.0 * sign[:, None, None]).astype(np.float32)
    state = (rng.normal(size=(n, 3, d)) + sign[:, None, None]).astype(np.float32)
    hit_text, hit_image = rng.random(n) < 0.5, rng.random(n) < 0.5
    by_rule = {"none": hit_text & hit_image, "text": hit_text, "image": hit_image, "both": hit_text | hit_image}
    rows = [{"episode_id": f"{kind}{i // per}", "step": i % per, "memory_kind": kind, "target": "tap",
             "target_type": "tap", "n_elements": int(3 + i % 7), "groups": [], "goal": "g"} for i in range(n)]
    return StepRecords(rows, {"aitw": by_rule, "learngui": dict(by_rule)},
                       {r: {"text": 0.5 - pref / 2, "image": 0.5 + pref / 2} for r in ("aitw", "learngui")},
                       {"none": state, "text": text, "image": image},
                       {m: rng.normal(size=(n, d)).astype(np.float32) for m in ("text", "image")})


def both_memories() -> StepRecords:
    a, b = records(), records(kind="task_graph", seed=1)
    return StepRecords(a.rows + b.rows, {r: {c: np.concatenate([a.hits[r][c], b.hits[r][c]]) for c in a.hits[r]}
                                         for r in a.hits},
                       {r: {m: np.concatenate([a.sampled[r][m], b.sampled[r][m]]) for m in a.sampled[r]}
                        for r in a.sampled},
                       {m: np.concatenate([a.hidden[m], b.hidden[m]]) for m in a.hidden},
                       {m: np.concatenate([a.candidates[m], b.candidates[m]]) for m in a.candidates})


def test_train_routers_is_the_probe_its_out_of_fold_teacher_and_the_two_routers():
    pool_all = both_memories()
    got = train_routers(pool_all, "smg", "aitw", CONFIG, ProbeConfig(3, 1.0), state_layer=-1, seed=0)
    pool = pool_all.of_memory("smg")
    decided = pool.non_tied()
    preferred = decided.preference() > 0
    probe = PreferenceProbe(ProbeConfig(3, 1.0), 0).fit(decided.shift(-1), preferred)
    teacher = probe.decision_function(pool.shift(-1))
    teacher[pool.preference() != 0] = cross_validated_decisions(decided.shift(-1), preferred, decided.episodes,
                                                                TEACHER_FOLDS, ProbeConfig(3, 1.0), 0)
    np.testing.assert_array_equal(got.teacher, teacher)  # out of fold where the probe was fitted
    state = pool.hidden["none"][:, -1]
    switchmem = train_router(state, pool.candidates["text"], pool.candidates["image"], teacher, CONFIG)
    np.testing.assert_array_equal(got.switchmem.score(state, pool.candidates["text"], pool.candidates["image"]),
                                  switchmem.score(state, pool.candidates["text"], pool.candidates["image"]))
    assert got.binary.config.target == "binary" and got.switchmem.config.target == "probe"
    assert got.switchmem.info["state_layer"] == got.binary.info["state_layer"] == -1
    np.testing.assert_array_equal(got.state(pool), state)
    summary = got.summary()
    assert set(summary) == {"switchmem", "binary", "probe_explained_variance", "teacher_positive_share"}
    assert summary["teacher_positive_share"] == float((teacher > 0).mean())


def test_a_pool_no_probe_can_be_fitted_on_is_refused_naming_the_records():
    pool = records(n_episodes=1)
    with pytest.raises(DataError, match="no probe can be fitted") as err:
        train_routers(pool, "smg", "aitw", CONFIG, ProbeConfig(3), where="data/layer_analysis")
    assert "data/layer_analysis" in str(err.value)


def test_score_routers_sets_tau_from_scores_alone_and_scores_both_rules_and_the_sweeps():
    pool, held = records(), records(seed=2)
    routers = train_routers(pool, "smg", "aitw", CONFIG, ProbeConfig(3))
    table, sweeps = score_routers(routers, held, "aitw", [0.25, 0.5], seed=0)
    assert routers.switchmem.tau == label_free_tau(routers.switchmem, held)
    assert set(table) == {"aitw", "learngui"}
    assert {"switchmem", "binary", "density", "random", "oracle"} <= set(table["aitw"])
    assert list(sweeps) == ["SwitchMem router", "binary-target router", "UI density"]
    assert all([r["rate"] for r in rows] == [0.25, 0.5] for rows in sweeps.values())
    fig = table_one_figure(fixed_baselines(held, ["smg"]), {"smg": table}, "Table 1")
    cells = fig.axes[0].tables[0].get_celld()
    assert len({row for row, _ in cells}) == 1 + 2 + 2  # the header, a row per rule, the paper's two rows
    assert [cells[r, 0].get_text().get_text() for r in (3, 4)] == [
        "paper (Qwen3.5-9B), AITW", "paper (Qwen3.5-9B), LearnGUI"]
    assert cells[3, 5].get_text().get_text() == "51.4"  # the paper's SwitchMem, AITW
    assert "random: as many steps routed to the image as SwitchMem" in fig.axes[0].texts[0].get_text()  # the key


def test_fixed_baselines_are_the_memories_not_routed():
    rec = both_memories()
    got = fixed_baselines(rec, ["smg"])
    tg = rec.of_memory("task_graph")
    assert list(got) == ["task_graph"] and set(got["task_graph"]) == {"aitw", "learngui"}
    assert got["task_graph"]["aitw"] == {c: float(tg.hits["aitw"][c].mean()) for c in ("none", "text", "image", "both")}


def test_findings_say_which_claims_hold():
    t = {"none": 0.1, "text": 0.4, "image": 0.5, "both": 0.3, "switchmem": 0.5, "random": 0.45, "binary": 0.5,
         "density": 0.4, "switchmem_vs_best_fixed": {"best_fixed": "image"}}
    assert switchmem_findings(t, 8, 9) == {
        "switchmem_at_least_best_fixed": True, "switchmem_above_random": True, "switchmem_above_binary_target": False,
        "switchmem_above_density": True, "beats_random_at_every_rate": False}


def test_headroom_findings_say_which_claims_hold():
    h = {"oracle_gain": 0.1, "switchmem": 0.5, "best_fixed_accuracy": 0.5}
    groups = {"UI density": {"sparse": {"image_minus_text": -0.1}, "mid": {"image_minus_text": 0.3},
                             "dense": {"image_minus_text": 0.2}},
              "step position": {"first step": {"image_minus_text": 0.1}, "later step": {"image_minus_text": 0.0}}}
    assert headroom_findings(h, groups) == {
        "oracle_headroom_exists": True, "switchmem_captures_headroom": False,
        "image_helps_more_on_dense_screens": True, "image_helps_more_after_first_step": False}


# ----------------------------------------------------------------------------- along trajectories
def test_routed_trajectories_are_each_episodes_choices_in_step_order():
    rec = records(n_episodes=3, per=4)
    routers = train_routers(rec, "smg", "aitw", CONFIG, ProbeConfig(3))
    order = np.random.default_rng(0).permutation(len(rec))
    shuffle = lambda by: {k: v[order] for k, v in by.items()}
    shuffled = StepRecords([rec.rows[i] for i in order], {r: shuffle(by) for r, by in rec.hits.items()},
                           {r: shuffle(by) for r, by in rec.sampled.items()}, shuffle(rec.hidden),
                           shuffle(rec.candidates))
    got = routed_trajectories(routers.switchmem, shuffled)
    want = routed_trajectories(routers.switchmem, rec)
    assert sorted(map(tuple, got)) == sorted(map(tuple, want)) and [len(t) for t in want] == [4, 4, 4]
    assert routing_statistics(got)["trajectories"] == 3
    missing = rec.subset(np.array([row["step"] != 2 for row in rec.rows]))
    with pytest.raises(DataError, match="needs every step") as err:
        routed_trajectories(routers.switchmem, missing, "data/layer_analysis")
    assert err.value.field == "max_eval_steps"


def trace(episode: str, memory: str, modality: str, seed: int) -> Trace:
    return Trace(episode, memory, modality, seed, 0, "g", (TraceStep("k", Action("back"), ()),), "done", True)


def test_05s_traces_are_reused_only_when_they_are_this_stages_plays(tmp_path):
    replays = [SimpleNamespace(episode=e, seed=s) for e in ("a", "b") for s in (1, 2)]
    earlier = [trace(r.episode, m, mod, r.seed) for m, mod in (("none", "none"), ("smg", "text"), ("smg", "image"))
               for r in replays]
    save_traces(tmp_path / "traces.jsonl", earlier)
    reused = reused_traces(tmp_path / "traces.jsonl", "smg", replays)
    assert list(reused) == ["none", "text"] and reused["text"] == earlier[4:8]
    played = {"switchmem": [trace("a", "switchmem", "both", 1)]}
    assert [t.memory for t in condition_traces(reused, played)] == ["none"] * 4 + ["text"] * 4 + ["switchmem"]
    with pytest.raises(DataError, match="did not play task_graph/text"):
        reused_traces(tmp_path / "traces.jsonl", "task_graph", replays)
    save_traces(tmp_path / "traces.jsonl", earlier[1:])
    with pytest.raises(DataError, match="did not play none/none") as err:
        reused_traces(tmp_path / "traces.jsonl", "smg", replays)
    assert str(tmp_path / "traces.jsonl") in str(err.value)

"""SwitchMem's pieces: sampled actions, the step records and their on-disk format, the probe and its
layer curve (a planted signal is recovered, no signal stays at chance), the router and its
label-free τ, the scores of routings, and the routed policy — on tiny actors and synthetic states.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from actor_fixtures import BUTTONS, RULES, an_input, examples, tiny_actor
from guimem.actors.mini.decoding import decode, sample_decode
from guimem.actors.mini.features import collate
from guimem.actors.mini.policy import MiniActor
from guimem.core.data import DataError
from guimem.routing.policy import SwitchMemPolicy
from guimem.routing.probe import (
    CurveConfig,
    PreferenceProbe,
    ProbeConfig,
    cross_validated_decisions,
    layer_curve,
    transfer_curve,
)
from guimem.routing.records import CONDITIONS, SampledPreference, StepRecords, collect_records, concat, step_seed
from guimem.routing.route_scores import (
    at_rate,
    beats_random,
    density_routing,
    headroom,
    label_free_tau,
    preference_shares,
    random_routing,
    rate_sweep,
    route_records,
    routed_hits,
    routing_runs,
    routing_statistics,
    table_one,
    where_image_helps,
)
from guimem.routing.router import Router, RouterConfig, calibrate_tau, train_router
from guimem.train.examples import ActorExample

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def actor() -> MiniActor:
    return tiny_actor()


# ----------------------------------------------------------------------------- sampling
def test_samples_are_valid_actions_seeded_per_prompt_and_low_temperature_is_argmax(actor):
    feats = [actor.featurise(an_input(i)) for i in range(3)]
    batch = collate(feats, ["text"] * 3, actor.config, actor.vocab)
    out = actor.model(**batch)
    gens = lambda: [torch.Generator().manual_seed(s) for s in (1, 2, 3)]
    a = sample_decode(out, feats, actor.config, 5, gens())
    assert len(a) == 3 and all(len(x) == 5 for x in a)
    assert a == sample_decode(out, feats, actor.config, 5, gens())  # fixed by the generators
    alone = sample_decode(actor.model(**collate(feats[1:2], ["text"], actor.config, actor.vocab)), feats[1:2],
                          actor.config, 5, [torch.Generator().manual_seed(2)])
    assert alone[0] == a[1]  # a prompt's draws do not depend on its batch
    cold = sample_decode(out, feats, actor.config, 3, gens(), temperature=1e-4)
    assert [c[0] for c in cold] == decode(out, feats, actor.config)
    touches = [x for row in a for x in row if x.type in ("tap", "long_press", "swipe")]
    centres = {e.center for e in BUTTONS}
    assert all(t.point in {(round(x, 4), round(y, 4)) for x, y in centres} for t in touches)
    with pytest.raises(DataError, match="temperature"):
        sample_decode(out, feats, actor.config, 2, gens(), temperature=0.0)
    with pytest.raises(DataError, match="generator"):
        sample_decode(out, feats, actor.config, 2, gens()[:2])


def test_memory_embeddings_read_only_the_memory_tokens(actor):
    feats = [actor.featurise(an_input(0)), actor.featurise(an_input(0, goal="something else entirely"))]
    for m in ("text", "image"):
        e = actor.memory_embeddings(feats, m)
        assert e.shape == (2, actor.config.hidden_size) and e.dtype == np.float32
        np.testing.assert_allclose(e[0], e[1], atol=1e-6)  # the goal is not part of the candidate
    assert not np.allclose(actor.memory_embeddings(feats, "text"), actor.memory_embeddings(feats, "image"))
    with pytest.raises(DataError, match="modality"):
        actor.memory_embeddings(feats, "both")


# ----------------------------------------------------------------------------- records
def test_collect_records_runs_every_condition_and_round_trips(actor, tmp_path):
    rec = collect_records(actor, examples(), RULES, SampledPreference(4), seed=0, batch_size=4, progress=False)
    n, layers, d = 6, actor.config.num_hidden_layers, actor.config.hidden_size
    assert len(rec) == n and rec.n_layers == layers and rec.d_model == d
    assert set(rec.hits["aitw"]) == set(CONDITIONS) and set(rec.sampled["learngui"]) == {"text", "image"}
    assert all(rec.hidden[c].shape == (n, layers + 1, d) for c in ("none", "text", "image"))
    assert np.all((rec.sampled["aitw"]["text"] * 4) % 1 == 0)  # shares of 4 draws
    again = collect_records(actor, examples(), RULES, SampledPreference(4), seed=0, batch_size=3, progress=False)
    np.testing.assert_array_equal(again.preference(), rec.preference())  # the batch does not move the draws
    rec.save(tmp_path / "rec")
    back = StepRecords.load(tmp_path / "rec")
    assert back.rows == rec.rows and back.meta == rec.meta
    for c in ("none", "text", "image"):
        np.testing.assert_array_equal(back.hidden[c], rec.hidden[c])
    for r in RULES:
        for c in CONDITIONS:
            np.testing.assert_array_equal(back.hits[r][c], rec.hits[r][c])
        np.testing.assert_array_equal(back.preference(r), rec.preference(r))
    both = concat([rec.subset(np.arange(n) < 2), rec.subset(np.arange(n) >= 2)])
    np.testing.assert_array_equal(both.hidden["text"], rec.hidden["text"])
    assert step_seed(0, "smg", "a", 1) != step_seed(0, "task_graph", "a", 1) != step_seed(1, "task_graph", "a", 1)


def test_text_and_image_draw_with_common_random_numbers(actor, monkeypatch):
    """Both renderings of a step draw from the same seed, so equal distributions give equal samples
    and a sampled preference says what the rendering changed, not how two independent draws fell."""
    seen: dict[str, list[int]] = {}
    real = actor.act_features

    def spy(feats, modalities, output_hidden_states=False, n_samples=0, generator=None, temperature=1.0):
        if n_samples:
            seen.setdefault(modalities[0], []).extend(g.initial_seed() for g in generator)
        return real(feats, modalities, output_hidden_states, n_samples, generator, temperature)

    monkeypatch.setattr(actor, "act_features", spy)
    collect_records(actor, examples(4), RULES, SampledPreference(3), progress=False)
    assert set(seen) == {"text", "image"} and seen["text"] == seen["image"]
    assert len(set(seen["text"])) == 4  # one seed per step
    feats = [actor.featurise(an_input(0))]
    out = actor.model(**collate(feats * 2, ["text", "text"], actor.config, actor.vocab))
    twins = sample_decode(out, feats * 2, actor.config, 6, [torch.Generator().manual_seed(7) for _ in range(2)])
    assert twins[0] == twins[1]  # the same distribution and seed: the same draws


def test_records_refuse_a_missing_rendering_and_a_bad_array(actor, tmp_path):
    ex = examples(2)
    ex[1] = ActorExample(ex[1].input.with_modality("text"), ex[1].target, "ep9", 0, "smg")
    with pytest.raises(DataError, match="as text and as image"):
        collect_records(actor, ex, RULES, SampledPreference(2), progress=False)
    rec = collect_records(actor, examples(3), RULES, SampledPreference(2), progress=False)
    rec.save(tmp_path / "rec")
    np.save(tmp_path / "rec" / "hidden_text.npy", np.zeros((3, 2, 5), np.float32))
    with pytest.raises(DataError, match="hidden_text"):
        StepRecords.load(tmp_path / "rec")
    rec.save(tmp_path / "rec2")
    manifest = json.loads((tmp_path / "rec2" / "manifest.json").read_text())
    (tmp_path / "rec2" / "manifest.json").write_text(json.dumps({**manifest, "n_steps": 4}))
    with pytest.raises(DataError, match="n_steps|hidden"):
        StepRecords.load(tmp_path / "rec2")


# ----------------------------------------------------------------------------- synthetic records
def synthetic(n_episodes: int = 60, per: int = 5, d: int = 12, layers: int = 4, signal: float = 2.0,
              seed: int = 0) -> StepRecords:
    """Records whose preference sign is planted along one direction of the shift, more strongly in deeper
    layers (layer 0 constant), with matching greedy hits, memory-free states and candidates."""
    rng = np.random.default_rng(seed)
    n = n_episodes * per
    y = rng.random(n) < 0.5  # image preferred
    direction = np.random.default_rng(99).normal(size=d)  # the same planted direction in every draw
    direction /= np.linalg.norm(direction)
    text = rng.normal(size=(n, layers + 1, d)).astype(np.float32)
    shift = rng.normal(size=(n, layers + 1, d))
    for layer in range(layers + 1):
        shift[:, layer] += (signal * layer / layers) * np.where(y, 1.0, -1.0)[:, None] * direction
    shift[:, 0] = 0.0
    image = (text + shift).astype(np.float32)
    state = rng.normal(size=(n, layers + 1, d)).astype(np.float32)
    state[:, -1, :d] += np.where(y, 1.0, -1.0)[:, None] * direction * 2  # the memory-free state knows it too
    hits_text, hits_image = ~y | (rng.random(n) < 0.3), y | (rng.random(n) < 0.3)
    pref = np.where(y, 0.5, -0.5)
    rows = [{"episode_id": f"e{i // per}", "step": i % per, "memory_kind": "smg", "target": "tap",
             "target_type": ["tap", "done", "back", "type"][i % 4], "n_elements": int(5 + i % 20),
             "groups": ["first step" if i % per == 0 else "later step",
                        "label-free icon" if i % 3 == 0 else "labelled control"], "goal": "g"} for i in range(n)]
    hits = {"aitw": {"none": hits_text & hits_image, "text": hits_text, "image": hits_image,
                     "both": hits_text | hits_image}}
    sampled = {"aitw": {"text": 0.5 - pref / 2, "image": 0.5 + pref / 2}}
    cand = {"text": rng.normal(size=(n, d)).astype(np.float32), "image": rng.normal(size=(n, d)).astype(np.float32)}
    return StepRecords(rows, hits, sampled, {"none": state, "text": text, "image": image}, cand)


def test_probe_recovers_a_planted_signal_that_grows_with_depth():
    rec = synthetic()
    y = rec.preference() > 0
    curve = layer_curve(rec.shift(), y, rec.episodes, ProbeConfig(pca_dim=8), CurveConfig(5, 100))
    assert curve[0]["constant"] and curve[0]["auc"] == 0.5
    assert curve[-1]["auc"] > 0.95 and curve[-1]["accuracy"] > 0.85
    assert curve[-1]["auc_ci"][0] > curve[1]["auc"]  # grows with depth, beyond its interval
    assert curve[-1]["auc_ci"][0] <= curve[-1]["auc"] <= curve[-1]["auc_ci"][1]
    other = synthetic(seed=1)
    transfer = transfer_curve(rec.shift(), y, other.shift(), other.preference() > 0, other.episodes,
                              ProbeConfig(pca_dim=8), CurveConfig(n_boot=50))
    assert transfer[-1]["auc"] > 0.95


def test_probe_without_signal_stays_at_chance():
    # 750 steps: an out-of-fold AUC on pure noise has a spread of about 0.03 (and cross-validation
    # leans slightly below 0.5), so chance is 0.5 within 0.12 per layer and within 0.05 on average.
    rec = synthetic(n_episodes=150, signal=0.0)
    curve = layer_curve(rec.shift(), rec.preference() > 0, rec.episodes, ProbeConfig(pca_dim=8), CurveConfig(5, 50))
    aucs = [row["auc"] for row in curve[1:]]
    assert all(0.38 < a < 0.62 for a in aucs) and abs(np.mean(aucs) - 0.5) < 0.05


def test_too_few_non_tied_steps_give_no_numbers_rather_than_made_up_ones():
    rec = synthetic(n_episodes=4)
    one_class = np.ones(len(rec), bool)
    curve = layer_curve(rec.shift(), one_class, rec.episodes, ProbeConfig(), CurveConfig(n_boot=10))
    assert all(np.isnan(r["auc"]) and "both renderings" in r["insufficient"] for r in curve)
    one_episode = layer_curve(rec.shift(), np.arange(len(rec)) % 2 == 0, np.zeros(len(rec)), ProbeConfig(),
                              CurveConfig(n_boot=10))
    assert all("one episode" in r["insufficient"] for r in one_episode)
    two = layer_curve(rec.shift()[:2], np.array([True, False]), np.array([0, 1]), ProbeConfig(), CurveConfig(n_boot=10))
    assert all("one won by each" in r["insufficient"] for r in two)  # no stratified fold exists
    three = cross_validated_decisions(rec.shift()[:3, -1], np.array([True, False, False]), np.arange(3), 5,
                                      ProbeConfig(pca_dim=2))
    assert three.shape == (3,)  # as many folds as the larger class has steps (2), not 5
    y = rec.preference() > 0
    assert all("one class" in r["insufficient"]
               for r in transfer_curve(rec.shift(), y, rec.shift(), one_class, rec.episodes, ProbeConfig(pca_dim=4),
                                  CurveConfig(n_boot=10)))


def test_cross_validation_never_scores_a_step_with_a_probe_that_saw_its_episode():
    """Each episode has its own random code in the shift and its own random label: only memorising
    episodes predicts the label. Folds that split an episode (plain KFold) learn it; folds by episode
    cannot, so the grouped probe stays at chance."""
    from sklearn.model_selection import KFold

    rng = np.random.default_rng(0)
    n_episodes, per, d = 40, 6, 64  # 40 codes in 64 dimensions: a linear probe can memorise them
    codes, labels = rng.normal(size=(n_episodes, d)) * 3, rng.random(n_episodes) < 0.5
    x = np.repeat(codes, per, axis=0) + rng.normal(size=(n_episodes * per, d)) * 0.3
    y, groups = np.repeat(labels, per), np.repeat(np.arange(n_episodes), per)
    grouped = cross_validated_decisions(x, y, groups, 5, ProbeConfig(pca_dim=64))
    assert abs(((grouped > 0) == y).mean() - 0.5) < 0.15
    leaky = np.zeros(len(y))
    for fit, score in KFold(5, shuffle=True, random_state=0).split(x):
        leaky[score] = PreferenceProbe(ProbeConfig(pca_dim=64)).fit(x[fit], y[fit]).decision_function(x[score])
    assert ((leaky > 0) == y).mean() > 0.8  # what the grouping prevents
    with pytest.raises(DataError, match="labels are equal"):
        PreferenceProbe().fit(x, np.ones(len(x), bool))


# ----------------------------------------------------------------------------- router
def test_router_learns_the_probes_decision_from_the_memory_free_state(tmp_path):
    rec = synthetic()
    fit, held = rec.subset(np.arange(len(rec)) < 200), rec.subset(np.arange(len(rec)) >= 200)
    probe = PreferenceProbe(ProbeConfig(pca_dim=8)).fit(fit.shift(-1), fit.preference() > 0)
    teacher = probe.decision_function(fit.shift(-1))
    router = train_router(fit.hidden["none"][:, -1], fit.candidates["text"], fit.candidates["image"], teacher,
                          RouterConfig(hidden=16, epochs=300, seed=0))
    router.info["state_layer"] = -1
    scores, image = route_records(router, held)
    assert ((scores > 0) == (held.preference() > 0)).mean() > 0.8
    assert router.info["final_loss"] < router.info["first_loss"]
    router.tau = calibrate_tau(scores, 0.3)
    router.save(tmp_path / "router")
    back = Router.load(tmp_path / "router")
    np.testing.assert_array_equal(route_records(back, held)[0], scores)
    assert back.tau == router.tau and back.info["state_layer"] == -1
    meta = json.loads((tmp_path / "router" / "router.json").read_text())
    (tmp_path / "router" / "router.json").write_text(json.dumps({**meta, "state_mean": [0.0]}))
    with pytest.raises(DataError, match="state_mean"):
        Router.load(tmp_path / "router")
    binary = train_router(fit.hidden["none"][:, -1], fit.candidates["text"], fit.candidates["image"],
                          (fit.preference() > 0).astype(float), RouterConfig(hidden=16, epochs=300, target="binary"))
    assert ((binary.score(held.hidden["none"][:, -1], held.candidates["text"], held.candidates["image"]) > 0)
            == (held.preference() > 0)).mean() > 0.8


def test_tau_is_calibrated_from_scores_alone():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=500)
    tau = calibrate_tau(scores, 0.3)
    assert (scores >= tau).sum() == 150 and not np.any(scores == tau)  # no step on the threshold
    assert calibrate_tau(scores, 0.0) == np.inf and calibrate_tau(scores, 1.0) == -np.inf
    with pytest.raises(DataError, match="image_rate"):
        calibrate_tau(scores, 1.5)
    # The stage's rule (label_free_tau, as 07_probe_router calls it): a trained router's τ on new
    # steps does not move when everything those steps say about actions and preferences is scrambled.
    rec = synthetic()
    router = train_router(rec.hidden["none"][:, -1], rec.candidates["text"], rec.candidates["image"],
                          rec.preference(), RouterConfig(hidden=8, epochs=50))
    new = synthetic(seed=3)
    order = np.random.default_rng(1).permutation(len(new))
    scrambled = StepRecords([{**r, "target_type": "done"} for r in new.rows],
                            {r: {c: ~v[order] for c, v in by.items()} for r, by in new.hits.items()},
                            {r: {c: 1 - v[order] for c, v in by.items()} for r, by in new.sampled.items()},
                            new.hidden, new.candidates)
    assert label_free_tau(router, scrambled) == label_free_tau(router, new)
    assert (route_records(router, new)[0] >= label_free_tau(router, new)).mean() == pytest.approx(
        router.train_image_rate, abs=1 / len(new))


# ----------------------------------------------------------------------------- scoring routings
def test_routing_scores_random_baseline_sweep_and_headroom():
    rec = synthetic()
    n = len(rec)
    perfect = rec.preference() > 0  # sends each step where image was preferred to Image
    text, image = rec.hits["aitw"]["text"], rec.hits["aitw"]["image"]
    np.testing.assert_array_equal(routed_hits(rec, np.zeros(n, bool)), text)
    np.testing.assert_array_equal(routed_hits(rec, np.ones(n, bool)), image)
    rnd = random_routing(rec, 0.4, n_draws=400)
    assert rnd["expected"] == pytest.approx(0.4 * image.mean() + 0.6 * text.mean())
    assert rnd["lo"] <= rnd["expected"] <= rnd["hi"]
    assert at_rate(np.arange(10.0), 0.3).tolist() == [False] * 7 + [True] * 3
    sweep = rate_sweep(rec.preference(), rec, [0.2, 0.5, 0.8])
    assert all(r["gain"] > 0 for r in sweep)
    assert beats_random(routed_hits(rec, perfect), rec, perfect.mean()) < 0.01
    assert density_routing(rec, 0.25).sum() == round(0.25 * n)
    h = headroom(rec, {"switchmem": perfect})
    assert h["oracle"] >= h["switchmem"] >= h["best_fixed_accuracy"] and h["oracle_gain"] > 0
    t = table_one(rec, {"switchmem": perfect}, ["aitw"])["aitw"]
    assert t["switchmem"] > t["random"] and t["switchmem_vs_random_p"] < 0.01
    assert set(CONDITIONS) <= set(t) and t["switchmem_image_rate"] == pytest.approx(perfect.mean())
    groups = where_image_helps(rec, perfect)
    assert sum(g["steps"] for g in groups["UI density"].values()) == n
    assert sum(g["steps"] for g in groups["step position"].values()) == n
    assert preference_shares(np.array([0.5, -0.25, 0.0, 0.5])) == {
        "steps": 4, "non_tied": 3, "non_tied_share": 0.75, "text_wins": 1 / 3, "image_wins": 2 / 3}


def test_routing_statistics_count_switches_and_runs():
    assert routing_runs([True, True, False, True]) == {"dual": True, "image_share": 0.75, "switches": 2,
                                                         "mean_run": 4 / 3, "steps": 4}
    stats = routing_statistics([[True, True, False, True], [False, False], [True]])
    assert stats["trajectories"] == 3 and stats["dual_modality_pct"] == pytest.approx(100 / 3)
    assert stats["image_steps_pct"] == pytest.approx(100 * 4 / 7)
    assert stats["switches_per_trajectory"] == pytest.approx(2 / 3)
    assert stats["mean_run_length"] == pytest.approx(7 / 5)


# ----------------------------------------------------------------------------- the routed policy
def test_switchmem_policy_runs_only_the_chosen_prompt(actor, monkeypatch):
    rec = collect_records(actor, examples(8), RULES, SampledPreference(2), progress=False)
    router = train_router(rec.hidden["none"][:, -1], rec.candidates["text"], rec.candidates["image"],
                          np.linspace(-1, 1, len(rec)), RouterConfig(hidden=8, epochs=20))
    inputs = [ex.input for ex in examples(8)]
    calls: list[list[str]] = []
    real = actor.act_features

    def spy(feats, modalities, *args, **kwargs):
        calls.append(list(modalities))
        return real(feats, modalities, *args, **kwargs)

    for tau, want in ((-np.inf, "image"), (np.inf, "text")):
        monkeypatch.setattr(actor, "act_features", spy)
        calls.clear()
        outs = SwitchMemPolicy(actor, router, tau=tau).act(inputs)
        monkeypatch.undo()
        assert calls == [["none"] * 4, [want] * 4] * 2  # per batch of 4: the memory-free pass, the chosen prompt
        assert all(o.info["modality"] == want for o in outs)
        fixed = actor.act([x.with_modality(want) for x in inputs])
        assert [o.action for o in outs] == [o.action for o in fixed]
    mixed = SwitchMemPolicy(actor, router, tau=0.0).act(inputs + [inputs[0].with_modality("text"),
                                                                   inputs[0].with_modality("none")])
    assert [o.info["modality"] for o in mixed[-2:]] == ["text", "none"] and mixed[-1].info["route_score"] is None
    scores = [o.info["route_score"] for o in mixed[:-2]]
    assert [o.info["modality"] for o in mixed[:-2]] == ["image" if s >= 0 else "text" for s in scores]

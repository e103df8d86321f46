"""The scripted demonstrator: solvability, noise, labels, success rate, and the dataset splits."""

from __future__ import annotations

import dataclasses

import pytest

from guimem.core.data import DataError

from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import (
    dataset_stats,
    Assignment,
    demonstrate,
    holds_everywhere,
    plan_tasks,
    run_episode,
    shared_tasks,
    split_combos,
    unseen_types_covered,
)
from guimem.phone.expert import play
from guimem.phone.tasks import TEMPLATES, make_task
from guimem.phone.world import World

NOISE_FREE = WorldConfig(p_wrong_tap=0.0, p_give_up=0.0, p_wrong_state=0.0, dialog_prob=0.5)


@pytest.mark.parametrize("tid", sorted(TEMPLATES))
def test_every_template_is_solved_without_noise(tid):
    """With shuffles, themes and popups on, the noise-free expert solves every template."""
    world = World(NOISE_FREE)
    combos = TEMPLATES[tid].combos()
    for k, combo in enumerate([combos[0], combos[len(combos) // 2], combos[-1]]):
        ep = run_episode(world, make_task(tid, combo), seed=100 + k, episode_id="e", images=None, mode="clean", strict=True)
        assert ep.success, (tid, combo, [s.action.describe() for s in ep.steps])
        assert ep.steps[-1].action.type == "done" and ep.provenance["ended"] == "done"


def _episodes(cfg: WorldConfig, n: int, seed: int = 0):
    tasks = plan_tasks(dataclasses.replace(cfg, n_train=n, n_test=0), seed)["train"]
    return demonstrate(cfg, tasks, seed, "train", progress=False, encode=False)[0]


def test_success_rate_lands_in_configured_range():
    cfg = WorldConfig()
    eps = _episodes(cfg, 160)
    rate = sum(bool(e.success) for e in eps) / len(eps)
    assert cfg.success_min <= rate <= cfg.success_max, rate
    assert dataset_stats(eps, cfg)["success_in_range"]


def test_noise_modes_fail_as_designed():
    cfg = WorldConfig(p_wrong_tap=0.0)
    world = World(cfg)
    tid = "notes.display"
    t = make_task(tid, TEMPLATES[tid].combos()[0])
    wrong = run_episode(world, t, 3, "w", None, mode="wrong_state")
    assert wrong.steps[-1].action.type == "done" and wrong.success is False
    quit_ = run_episode(world, t, 3, "q", None, mode="give_up_impossible")
    assert quit_.steps[-1].action.type == "impossible" and quit_.success is False
    lost = run_episode(world, t, 3, "b", None, mode="give_up_budget")
    assert len(lost.steps) == cfg.max_steps and lost.provenance["ended"] == "budget" and lost.success is False
    assert lost.steps[-1].action.type not in ("done", "impossible")


def test_wrong_taps_are_undone_and_labelled_with_their_subgoal():
    cfg = WorldConfig(p_wrong_tap=0.5, p_give_up=0.0, p_wrong_state=0.0, dialog_prob=0.0)
    world = World(cfg)
    tid = "clock.display"
    ep = run_episode(world, make_task(tid, TEMPLATES[tid].combos()[1]), 8, "x", None, mode="clean")
    clean = run_episode(World(dataclasses.replace(cfg, p_wrong_tap=0.0)), make_task(tid, TEMPLATES[tid].combos()[1]), 8, "y", None,
                        mode="clean")
    assert ep.success and len(ep.steps) > len(clean.steps)
    assert any(s.action.type == "back" for s in ep.steps)
    assert {s.subgoal.text for s in ep.steps} == {s.subgoal.text for s in clean.steps}


def test_labels_are_consecutive_and_popups_get_their_own_subgoal():
    cfg = WorldConfig(dialog_prob=1.0)
    eps = _episodes(cfg, 40, seed=1)
    saw_popup = False
    for ep in eps:
        idx = [s.subgoal.index for s in ep.steps]
        assert idx[0] == 0 and all(b - a in (0, 1) for a, b in zip(idx, idx[1:])), idx
        texts = {}
        for s in ep.steps:  # one index, one subgoal
            assert texts.setdefault(s.subgoal.index, (s.subgoal.type, s.subgoal.text)) == (s.subgoal.type, s.subgoal.text)
        saw_popup |= any(s.subgoal.type == "dismiss_popup" for s in ep.steps)
    assert saw_popup


def test_demonstration_is_deterministic():
    cfg = WorldConfig()
    a = [e.to_dict() for e in _episodes(cfg, 12, seed=5)]
    b = [e.to_dict() for e in _episodes(cfg, 12, seed=5)]
    assert a == b
    assert a != [e.to_dict() for e in _episodes(cfg, 12, seed=6)]


def test_splits_hold_unseen_parameters_and_templates():
    cfg = WorldConfig(n_train=200, n_test=80)
    combos = split_combos(cfg)
    for tid, c in combos.items():
        assert not set(c["train"]) & set(c["test"])
        if tid not in cfg.unseen_templates:
            assert c["train"]
    jobs = plan_tasks(cfg, 0)
    tasks = {split: [a.task for a in assigned] for split, assigned in jobs.items()}
    train_templates = {t.template for t in tasks["train"]}
    assert not train_templates & set(cfg.unseen_templates)
    unseen = [t for t in tasks["test"] if t.template in cfg.unseen_templates]
    assert len(unseen) == round(80 * cfg.test_unseen_share)
    train_params = {(t.template, t.params) for t in tasks["train"]}
    assert not any((t.template, t.params) in train_params for t in tasks["test"])
    assert unseen_types_covered(cfg)


def test_variants_split_training_from_evaluation_and_memory_holds_other_tasks():
    cfg = WorldConfig(n_train=120, n_test=60, n_memory=200)
    jobs = plan_tasks(cfg, 0)
    assert {a.variant for a in jobs["train"]} == set(cfg.train_variants)
    assert {a.variant for a in jobs["test"]} == {a.variant for a in jobs["memory"]} == set(cfg.eval_variants)
    test_jobs = {(a.task.template, a.task.params) for a in jobs["test"]}
    memory_jobs = [(a.task.template, a.task.params) for a in jobs["memory"]]
    assert not test_jobs & set(memory_jobs)  # never a test episode's task, on any variant
    assert shared_tasks(jobs["test"], jobs["memory"]) == 0
    assert shared_tasks(jobs["test"], jobs["test"][:5]) >= 5  # what it counts: the goals a memory holds verbatim
    assert {t for t, _ in memory_jobs} == set(TEMPLATES)  # but experience of every template
    assert len(memory_jobs) == 200


def test_variant_zero_must_be_a_training_variant():
    with pytest.raises(DataError, match="train_variants.*reference"):
        WorldConfig(train_variants=(1, 2))


def test_a_task_holds_everywhere_when_its_path_reads_and_looks_as_on_the_reference_design():
    world = World(WorldConfig(dialog_prob=0.0), render=False)
    rename = make_task("notes.rename", (("new", "Errands"), ("old", "Groceries")))
    switch = make_task("clock.switch_alarm", TEMPLATES["clock.switch_alarm"].combos()[0])
    assert holds_everywhere(world, Assignment(rename, 0), 1)  # the reference design itself
    assert not holds_everywhere(world, Assignment(rename, 4), 1)  # the search glyph in variant 4's own design
    assert holds_everywhere(world, Assignment(switch, 4), 1)  # a switch in the row the goal names: any variant
    world.reset(rename, 1, 4)
    trace = play(world.fork(), TEMPLATES["notes.rename"].full_plan(dict(rename.params)))
    assert any(e.look[1].startswith("search@") for e in trace)  # the trace records how a touched widget looks

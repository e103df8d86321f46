"""Expert labels on demonstration steps, and DAgger: the actor's rollouts relabelled by the expert."""

from __future__ import annotations

import random

import numpy as np
import pytest

from guimem.core.data import Action, Step
from guimem.core.policy import PolicyOutput
from guimem.eval.closed_loop import Replay
from guimem.models.embedding import PixelEmbedder
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import run_episode
from guimem.phone.expert import Expert
from guimem.phone.tasks import make_task
from guimem.phone.world import World
from guimem.smg.screens import blind
from guimem.train.dagger import Rollout, dagger_examples, plan_rollouts
from guimem.train.examples import target_of

CONFIG = WorldConfig(dialog_prob=0.0, max_steps=12)
DARK = make_task("notes.display", (("option", "Dark mode"), ("state", "on")))
PIN = make_task("notes.pin", (("title", "Groceries"),))


class Scripted:
    """A policy that answers every input with the same action; records the modality it was shown."""

    def __init__(self, action: Action):
        self.action, self.shown = action, []

    def act(self, inputs, output_hidden_states=False):
        self.shown += [x.modality for x in inputs]
        return [PolicyOutput(self.action) for _ in inputs]


# ----------------------------------------------------------------------------- expert labels in the stores
def test_every_demonstration_step_carries_the_experts_action_and_blind_drops_it():
    world = World(WorldConfig(p_wrong_tap=0.5))
    eps = [run_episode(world, DARK, seed, "e", None, mode="clean", variant=1) for seed in range(4, 12)]
    assert all(s.expert is not None for ep in eps for s in ep.steps)
    dead_ends = [s for ep in eps for s in ep.steps if s.observation.screen == "notes/info"]  # where a wrong tap led
    assert dead_ends and all(s.expert == Action("back") for s in dead_ends)  # the expert's way back
    ep = eps[0]
    assert all(target_of(s) is s.expert for s in ep.steps)
    assert all(s.expert is None for s in blind(ep).steps)
    assert Step.from_dict(ep.steps[0].to_dict()) == ep.steps[0]


def test_a_wrong_state_demonstration_is_labelled_with_the_true_task():
    world = World(CONFIG)
    ep = run_episode(world, DARK, 9, "w", None, mode="wrong_state")
    assert ep.success is False
    last = ep.steps[-1]
    assert last.action.type == "done" and last.expert.type != "done"  # the demonstrator was wrong to stop


def test_target_of_falls_back_to_the_action_taken():
    world = World(CONFIG)
    ep = run_episode(world, PIN, 1, "p", None, mode="clean")
    step = Step(ep.steps[0].observation, ep.steps[0].action)
    assert target_of(step) is step.action


# ----------------------------------------------------------------------------- DAgger
def test_rollout_states_are_labelled_with_what_the_expert_would_do():
    policy = Scripted(Action("back"))  # a hopeless actor: leaves the app at once
    rollouts = [Rollout(Replay("a", DARK, 3, variant=2)), Rollout(Replay("b", PIN, 5, variant=0))]
    examples, stats = dagger_examples(policy, rollouts, CONFIG, max_history=4, seed=0, progress=False)
    assert stats.episodes == 2 and stats.states == len(examples) + (stats.states - stats.kept)
    world = World(CONFIG)
    world.reset(DARK, 3, variant=2)
    first = Expert(world).act(world, random.Random(0))[0]
    a = [ex for ex in examples if ex.episode_id == "a"]
    assert a[0].target.type == first.type == "tap" and a[0].step == 0
    assert any(ex.target.type == "open_app" for ex in a)  # back on the launcher: the expert reopens the app
    assert stats.ended == {"budget": 2} and stats.success == 0
    assert sum(stats.labels.values()) == stats.kept and stats.labels["open_app"] >= 1
    assert stats.kept_after_first_disagreement == stats.kept - 2  # each rollout strays at its first step
    assert stats.to_dict()["labels"] == dict(sorted(stats.labels.items()))


def test_with_beta_the_expert_carries_out_its_share_of_the_actions():
    policy = Scripted(Action("back"))  # hopeless alone
    rollouts = [Rollout(Replay("a", DARK, 3, variant=2)), Rollout(Replay("b", PIN, 5, variant=0))]
    _, alone = dagger_examples(policy, rollouts, CONFIG, max_history=4, seed=0, progress=False)
    _, led = dagger_examples(policy, rollouts, CONFIG, max_history=4, seed=0, progress=False, beta=1.0)
    assert alone.success == 0 and led.success == 2  # the expert's own actions finish both tasks
    assert led.states < alone.states and led.disagreements == led.states - led.labels.get("back", 0)
    _, half = dagger_examples(policy, rollouts, CONFIG, max_history=4, seed=0, progress=False, beta=0.5)
    assert half.states > led.states  # some of the actor's backs are carried out: detours to label
    with pytest.raises(ValueError, match="beta"):
        dagger_examples(policy, rollouts, CONFIG, max_history=4, seed=0, progress=False, beta=1.5)


def test_rollouts_are_deterministic_and_keep_a_state_once():
    policy = Scripted(Action("tap", point=(0.5, 0.95)))  # taps nothing: the same screen every step
    rollouts = [Rollout(Replay("a", PIN, 3))]
    first, stats = dagger_examples(policy, rollouts, CONFIG, 2, seed=1, progress=False)
    again, _ = dagger_examples(policy, rollouts, CONFIG, 2, seed=1, progress=False)
    assert [(e.target, e.step) for e in first] == [(e.target, e.step) for e in again]
    assert stats.states == CONFIG.max_steps and stats.kept < stats.states  # the repeated prompt is kept once


class _Mem:
    def __init__(self, name):
        self.name = name
        self.image_embedder = PixelEmbedder(4, 8)
        self.queries = []

    def retrieve(self, screenshot, goal, k=1):
        self.queries.append(screenshot)
        return type("R", (), {"items": [], "ids": (self.name,)})()

    def render_text(self, retrieved):
        return f"memory {self.name}"

    def render_image(self, retrieved):
        from PIL import Image
        return Image.new("RGB", (4, 8))


def test_a_rollout_reads_its_memory_in_its_modality_and_examples_keep_both():
    policy = Scripted(Action("done"))
    rollouts = [Rollout(Replay("a", PIN, 3), _Mem("m"), "smg", "image")]
    examples, _ = dagger_examples(policy, rollouts, CONFIG, 2, seed=0, progress=False)
    assert policy.shown == ["image"]
    query = rollouts[0].memory.queries[0]  # the screen's vector, embedded with the tick's other new screens
    np.testing.assert_array_equal(query, PixelEmbedder(4, 8).embed([examples[0].input.screenshot])[0])
    assert examples[0].input.memory_text == "memory m" and examples[0].input.memory_image is not None
    assert examples[0].memory_kind == "smg"


def test_plan_rollouts_replay_in_fresh_seeds_on_the_episodes_variants_with_other_folds_memories():
    world = World(CONFIG)
    eps = [run_episode(world, t, s, f"e{s}", None, variant=s % 2) for s, t in enumerate([DARK, PIN, DARK, PIN])]
    folds = {e.id: i % 2 for i, e in enumerate(eps)}
    memories = [{"smg": _Mem("fold0-excluded")}, {"smg": _Mem("fold1-excluded")}]
    rollouts = plan_rollouts(eps, folds, memories, 3, seed=0, modality_weights=(0, 1, 0, 0))
    assert len(rollouts) == 3
    by_id = {e.id: e for e in eps}
    for r in rollouts:
        ep = by_id[r.replay.episode]
        assert r.replay.variant == ep.provenance["variant"] and r.replay.seed != ep.provenance["seed"]
        assert r.memory is memories[folds[ep.id]]["smg"] and r.modality == "text"
    with pytest.raises(ValueError):
        plan_rollouts(eps, folds, memories, 2, seed=0, modality_weights=(0, 0, 0, 0))

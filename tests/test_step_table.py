"""The one step-score table: any policy, any modality; the featurising fast path gives the same answers."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from PIL import Image

from guimem.actors.mini.config import ActorConfig
from guimem.actors.mini.model import GuiActor
from guimem.actors.mini.policy import MiniActor
from guimem.actors.mini.tiny import TINY
from guimem.actors.mini.train import build_vocabulary
from guimem.core.data import Action, UIElement
from guimem.core.policy import FeaturisingPolicy, PolicyInput, PolicyOutput
from guimem.eval.action_match import MatchConfig, step_accuracy
from guimem.eval.step_table import step_table
from guimem.train.examples import ActorExample

AITW = MatchConfig(variant="aitw")


def tiny_actor_and_examples() -> tuple[MiniActor, list[ActorExample]]:
    """A random 2-layer actor and 12 steps whose memory is text, image, both or none."""
    torch.set_num_threads(1)
    els = (UIElement("b0", "button", "Display", bounds=(0.0, 0.0, 0.5, 0.25), clickable=True),)
    shots = [Image.new("RGB", (90, 180), c) for c in [(200, 30, 30), (30, 30, 200), (30, 200, 30)]]
    examples = []
    for i in range(12):
        text = "1. succeeded | did: tap \"Display\"" if i % 3 else None
        image = shots[(i + 1) % 3] if i % 4 else None
        examples.append(ActorExample(PolicyInput(shots[i % 3], els, "open display", (), text, image),
                                     Action("tap", (0.25, 0.1)) if i % 2 else Action("back"), f"e{i}", 0, "smg"))
    vocab = build_vocabulary(examples, min_count=1, n_hash_buckets=8)
    torch.manual_seed(0)
    actor = MiniActor(GuiActor(ActorConfig(vocab_size=len(vocab), app_names=["Notes"], **TINY)).eval(), vocab,
                      batch_size=5)
    return actor, examples


class ActOnly:
    """The same actor offering only ``act``: scored the slow way, through reduced inputs."""

    def __init__(self, actor: MiniActor):
        self.actor, self.batch_size = actor, actor.batch_size

    def act(self, inputs, output_hidden_states=False):
        return self.actor.act(inputs, output_hidden_states)


def test_the_featurising_path_gives_the_answers_act_gives():
    actor, examples = tiny_actor_and_examples()
    assert isinstance(actor, FeaturisingPolicy) and not isinstance(ActOnly(actor), FeaturisingPolicy)
    fast = step_table(actor, examples, ["none", "text", "image", "both"], AITW)
    slow = step_table(ActOnly(actor), examples, ["none", "text", "image", "both"], AITW)
    for m in fast:
        assert np.array_equal(fast[m].index, slow[m].index)
        assert np.array_equal(fast[m].step, slow[m].step) and np.array_equal(fast[m].type, slow[m].type)
    assert [len(fast[m].index) for m in ("none", "text", "image", "both")] == [12, 8, 9, 6]


def test_scores_agree_with_step_accuracy_on_the_same_predictions():
    actor, examples = tiny_actor_and_examples()
    scores = step_table(actor, examples, ["text"], AITW)["text"].scores()
    kept = [ex for ex in examples if ex.input.memory_text is not None]
    preds = [o.action for o in actor.act([ex.input.with_modality("text") for ex in kept])]
    ref = step_accuracy(preds, [ex.target for ex in kept], [ex.input.elements for ex in kept], AITW)
    assert scores == {k: ref[k] for k in ("n_steps", "step_accuracy", "type_accuracy")}


def test_a_policy_with_only_act_is_scored_on_the_inputs_that_carry_each_memory():
    class Fixed:
        batch_size = 2
        seen: list = []

        def act(self, inputs, output_hidden_states=False):
            self.seen.extend(inputs)
            return [PolicyOutput(Action("tap", point=(0.5, 0.5)) if x.memory_text else Action("back"))
                    for x in inputs]

    shot = Image.new("RGB", (8, 16))
    box = (UIElement("ok", "button", "OK", "", (0.4, 0.4, 0.6, 0.6), True),)
    tap = Action("tap", point=(0.5, 0.52))
    with_text = PolicyInput(shot, box, "press OK", (), "1. did: tap \"OK\"", None)
    bare = PolicyInput(shot, box, "press OK", (), None, None)
    examples = [SimpleNamespace(input=with_text, target=tap), SimpleNamespace(input=bare, target=tap),
                SimpleNamespace(input=with_text, target=Action("back"))]
    policy = Fixed()
    table = step_table(policy, examples, ["none", "text", "image"], AITW)
    assert table["none"].scores()["n_steps"] == 3 and table["none"].scores()["step_accuracy"] == pytest.approx(1 / 3)
    assert list(table["text"].index) == [0, 2] and list(table["text"].step) == [True, False]
    assert table["image"].scores()["n_steps"] == 0 and np.isnan(table["image"].scores()["step_accuracy"])
    assert all(x.memory_text is None for x in policy.seen[:3])  # 'none' really hid the text

"""Tiny miniature actors and their inputs, shared by the tests of the actor, of SwitchMem and of the
executor: three screen elements, a seeded random actor of :data:`guimem.actors.mini.tiny.TINY` size,
steps to run it on and the action-matching rules it is scored by."""

from __future__ import annotations

import torch
from PIL import Image

from guimem.actors.mini.config import ActorConfig
from guimem.actors.mini.model import GuiActor
from guimem.actors.mini.policy import MiniActor
from guimem.actors.mini.tiny import TINY
from guimem.actors.mini.train import build_vocabulary
from guimem.core.data import Action, UIElement
from guimem.core.policy import PolicyInput
from guimem.eval.action_match import MatchConfig
from guimem.train.examples import ActorExample

BUTTONS = (UIElement("b0", "button", "Display", bounds=(0.0, 0.0, 0.5, 0.25), clickable=True),
           UIElement("b1", "button", "Sound", bounds=(0.5, 0.5, 1.0, 0.75), clickable=True),
           UIElement("i0", "icon", "", bounds=(0.0, 0.75, 0.5, 1.0), clickable=True))


def screen(colour=(230, 230, 230)) -> Image.Image:
    return Image.new("RGB", (90, 180), colour)


def an_input(i: int = 0, goal: str = 'Rename "Yoga" to Errands') -> PolicyInput:
    return PolicyInput(screen((200 - 10 * i, 200, 200)), BUTTONS, goal, (Action("tap", point=(0.25, 0.12)),),
                       f"1. succeeded | did: tap \"Display\" {i}", screen((10 * i, 100, 30)))


def tiny_actor() -> MiniActor:
    """A tiny random miniature actor (seeded)."""
    vocab = build_vocabulary([ActorExample(an_input(), Action("back"))], min_count=1, n_hash_buckets=8)
    torch.manual_seed(0)
    model = GuiActor(ActorConfig(vocab_size=len(vocab), app_names=["Notes", "Shop"], **TINY)).eval()
    return MiniActor(model, vocab, batch_size=4)


def examples(n: int = 6) -> list[ActorExample]:
    targets = [Action("tap", point=(0.25, 0.12)), Action("back"), Action("type", text="Yoga"), Action("done")]
    return [ActorExample(an_input(i), targets[i % 4], f"ep{i // 3}", i % 3, "smg") for i in range(n)]


RULES = {"aitw": MatchConfig("aitw"), "learngui": MatchConfig("learngui", screen_size_px=(90, 180))}

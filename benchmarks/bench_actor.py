"""Benchmark of the miniature actor (default config, random weights: speed does not depend on them).

Reports, on one CPU thread with realistic prompts (a 180x360 screenshot with 12 labelled
elements, a ~120-word memory block, a 180x360 memory image):

* inference: steps per CPU second through ``MiniActor.act``, one input per call and batches
  of 32, for each memory modality;
* hidden states: the extra cost of ``output_hidden_states=True`` relative to a plain forward
  (model only, and end to end through ``act``); it must stay within 10%;
* training: behaviour-cloning examples per CPU second (forward + backward + AdamW step) per
  modality, and the mean over a uniform modality draw, which sizes the ``actor`` stage;
* closed loop: episodes per second of :func:`guimem.eval.closed_loop.run_closed_loop` playing
  ``LOOP_EPISODES`` world tasks (20-step budget, no memory) in lock-step, with and without
  reusing the answer to an input already seen (``memo``), measured side by side.

Writes ``benchmarks/results/actor.json``. Run: ``python benchmarks/bench_actor.py`` (about a
minute on an idle 2-core machine).
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import torch
from PIL import Image, ImageDraw

from guimem.actors.mini.config import ActorConfig
from guimem.actors.mini.features import collate, stack_targets, targets_for
from guimem.actors.mini.model import GuiActor
from guimem.actors.mini.policy import MiniActor
from guimem.actors.mini.train import build_vocabulary
from guimem.core.data import Action, UIElement
from guimem.core.io import write_json
from guimem.core.policy import MODALITIES, PolicyInput
from guimem.eval.closed_loop import Replay, run_closed_loop
from guimem.phone.config import WorldConfig
from guimem.phone.tasks import TEMPLATES, sample_task
from guimem.phone.world import World
from guimem.train.examples import ActorExample

BATCH = 32  # prompts per batched call
REPEATS = 3  # timed runs per measurement (the fastest is kept)
LOOP_EPISODES = 24  # closed-loop episodes per timed run
OUT = Path(__file__).parent / "results" / "actor.json"
MEMORY_TEXT = (
    "Past experience (3 of 12):\n"
    "1. succeeded | task: Turn on Auto-save in Notes | subgoal: open the Preferences screen | did: tap "
    "\"Preferences\" (list_item) | result: The screen changed from 'Notes' to 'Preferences'\n"
    "2. succeeded | task: Sort the notes by date | subgoal: open the menu | did: tap an unlabeled icon at top "
    "right | result: A menu opened\n"
    "3. failed | task: Empty the trash in Notes | subgoal: open the Trash screen | did: tap \"Trash\" (list_item); "
    "back | result: The screen changed from 'Notes' to 'Trash'"
)


def phone(i: int) -> tuple[Image.Image, tuple[UIElement, ...]]:
    """A 180x360 list screen with 12 labelled rows (the row colours vary with ``i``)."""
    img = Image.new("RGB", (180, 360), (245, 245, 245))
    d = ImageDraw.Draw(img)
    rows = []
    for r in range(12):
        y0 = 0.1 + r * 0.075
        d.rectangle([4, y0 * 360, 176, (y0 + 0.07) * 360], fill=((i * 37 + r * 20) % 255, 180, 200))
        rows.append(UIElement(f"r{r}", "list_item", f"Item number {r}", bounds=(0.0, y0, 1.0, y0 + 0.07),
                              clickable=True))
    return img, tuple(rows)


def inputs(n: int) -> list[PolicyInput]:
    """``n`` prompts carrying memory as text and as image, with a 4-action history."""
    memory = phone(99)[0]
    out = []
    for i in range(n):
        img, els = phone(i)
        history = (Action("open_app", text="Notes"), Action("tap", point=(0.9, 0.05)), Action("back"),
                   Action("swipe", point=(0.5, 0.8), end=(0.5, 0.3)))
        out.append(PolicyInput(img, els, f"Turn on Auto-save in Notes number {i}", history, MEMORY_TEXT, memory))
    return out


def fastest(fn, repeats: int = REPEATS) -> float:
    """Shortest CPU time of ``fn()`` after a warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def paired(fn_a, fn_b, repeats: int = REPEATS) -> tuple[float, float]:
    """Shortest CPU times of ``fn_a()`` and ``fn_b()``, run alternately (guards their ratio against drift)."""
    fn_a(), fn_b()
    ta, tb = [], []
    for _ in range(repeats):
        for fn, times in ((fn_a, ta), (fn_b, tb)):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
    return min(ta), min(tb)


def main() -> dict:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    batch_inputs = inputs(BATCH)
    vocab = build_vocabulary([ActorExample(x, Action("back")) for x in batch_inputs], min_count=1)
    config = ActorConfig(vocab_size=len(vocab), app_names=["Notes"])
    model = GuiActor(config)
    actor = MiniActor(model, vocab, batch_size=BATCH)
    feats = [actor.featurise(x) for x in batch_inputs]
    result: dict = {"config": {k: getattr(config, k) for k in (
        "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "screen_height",
        "screen_width", "memory_image_height", "memory_image_width", "patch_size", "max_memory_tokens")},
        "parameters": sum(p.numel() for p in model.parameters())}

    # inference, per modality: batch of 32 and one at a time (featurisation included)
    for m in MODALITIES:
        xs = [x.with_modality(m) for x in batch_inputs]
        batch = collate(feats, [m] * BATCH, config, vocab)
        result[f"prompt_tokens_{m}"] = int(batch["attention_mask"][0].sum())
        result[f"steps_per_cpu_s_batch{BATCH}_{m}"] = BATCH / fastest(lambda: actor.act(xs))
        result[f"steps_per_cpu_s_single_{m}"] = 8 / fastest(lambda: [actor.act([x]) for x in xs[:8]])

    # hidden states: model forward and end-to-end act, with vs without
    batch = collate(feats, ["both"] * BATCH, config, vocab)
    model.eval()
    with torch.no_grad():
        plain, hidden = paired(lambda: model(**batch), lambda: model(**batch, output_hidden_states=True), repeats=5)
    result["hidden_states_cost_forward"] = hidden / plain - 1  # relative extra time
    xs = [x.with_modality("both") for x in batch_inputs]
    plain, hidden = paired(lambda: actor.act(xs), lambda: actor.act(xs, output_hidden_states=True), repeats=5)
    result["hidden_states_cost_act"] = hidden / plain - 1
    result["hidden_states_within_10_percent"] = bool(max(result["hidden_states_cost_forward"],
                                                         result["hidden_states_cost_act"]) <= 0.10)

    # training throughput per modality (forward + backward + optimizer step)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    targets = stack_targets([targets_for(Action("tap", point=(0.5, 0.3)), f, config) for f in feats])

    def step(b: dict) -> None:
        out = model(**b, **targets)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        opt.step()

    rates = {}
    for m in MODALITIES:
        b = collate(feats, [m] * BATCH, config, vocab)
        rates[m] = BATCH / fastest(lambda: step(b))
        result[f"train_examples_per_cpu_s_{m}"] = rates[m]
    result["train_examples_per_cpu_s_uniform_draw"] = len(MODALITIES) / sum(1 / r for r in rates.values())

    # closed loop: a whole episode batch through world + actor, answer memo on and off (paired runs)
    import random
    rng = random.Random(0)
    names = sorted(TEMPLATES)
    replays = [Replay(f"bench-{i}", sample_task(names[i % len(names)], rng), seed=i) for i in range(LOOP_EPISODES)]
    loop_vocab = build_vocabulary([ActorExample(x, Action("back")) for x in batch_inputs], min_count=1)
    loop_actor = MiniActor(GuiActor(ActorConfig(vocab_size=len(loop_vocab), app_names=["Notes"])).eval(), loop_vocab,
                           batch_size=64)
    world_config = WorldConfig(max_steps=20)

    played: list[int] = []  # steps of each run (the same every run: world and actor are deterministic)

    def play(memo: bool) -> None:
        traces = run_closed_loop(lambda: World(world_config), replays, loop_actor, None, "none", modality="none",
                                 batch_size=0, progress=False, memo=memo)
        played.append(sum(len(t.steps) for t in traces))

    without, with_memo = paired(lambda: play(False), lambda: play(True), repeats=2)
    result["closed_loop_episodes_per_s"] = LOOP_EPISODES / with_memo
    result["closed_loop_episodes_per_s_without_memo"] = LOOP_EPISODES / without
    result["closed_loop_steps_per_s"] = played[-1] / with_memo
    result["closed_loop_steps_per_episode"] = played[-1] / LOOP_EPISODES
    result["machine"] = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads 1"
    write_json(OUT, result)
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=1, sort_keys=True))

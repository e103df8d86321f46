"""Benchmark of SwitchMem's routing cost (default actor config, random weights; one CPU thread).

Side by side in one run, alternating, the fastest of ``REPEATS`` CPU times per batch of ``BATCH``
realistic prompts (those of ``bench_actor.py``: a 180x360 screen with 12 labelled rows, a ~120-word
memory block, a memory image), each measured end to end from the raw inputs (featurising included):

* **fixed**: the actor on the text-memory prompt (one memory prompt per step);
* **routed**: :class:`guimem.routing.policy.SwitchMemPolicy` — the memory-free forward pass (its
  hidden state is the router's state), the candidates' embeddings, the MLP, then the chosen prompt;
* **both evaluated**: the actor run on the text *and* the image prompt with hidden states (what
  choosing by comparing the two answers, or reading ``h_I - h_T`` at run time, would cost);
* **hidden states**: a plain forward against one with ``output_hidden_states=True``.

Targets (issue "SwitchMem end to end"): routed ≤ 1.15 x fixed (the router's overhead); both evaluated
≥ 2 x routed; hidden states ≤ 1.10 x plain. All three ratios are written, met or not, with where a
routed step's time goes (featurising, the memory-free forward, the candidates' embeddings, a text
and an image forward, measured in turn) and the mean prompt length in tokens under each rendering.
Writes ``benchmarks/results/routing.json``. Run: ``python benchmarks/bench_routing.py`` (about a
minute on an idle 2-core machine).
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from bench_actor import inputs
from guimem.actors.mini.config import ActorConfig
from guimem.actors.mini.features import collate
from guimem.actors.mini.model import GuiActor
from guimem.actors.mini.policy import MiniActor
from guimem.actors.mini.train import build_vocabulary
from guimem.core.data import Action
from guimem.core.io import write_json
from guimem.routing.policy import SwitchMemPolicy
from guimem.routing.router import RouterConfig, train_router
from guimem.train.examples import ActorExample

BATCH = 32
REPEATS = 5
OUT = Path(__file__).parent / "results" / "routing.json"


def alternating(fns: dict, repeats: int = REPEATS) -> dict[str, float]:
    """Fastest CPU time of each function, the functions run in turn ``repeats`` times after a warm-up."""
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            start = time.process_time()
            fn()
            times[k].append(time.process_time() - start)
    return {k: min(v) for k, v in times.items()}


def main() -> dict:
    torch.set_num_threads(1)
    xs = inputs(BATCH)
    vocab = build_vocabulary([ActorExample(x, Action("back")) for x in xs], min_count=1)
    torch.manual_seed(0)
    actor = MiniActor(GuiActor(ActorConfig(vocab_size=len(vocab))).eval(), vocab, batch_size=BATCH)
    d = actor.config.hidden_size
    rng = np.random.default_rng(0)
    router = train_router(rng.normal(size=(64, d)), rng.normal(size=(64, d)), rng.normal(size=(64, d)),
                          rng.normal(size=64), RouterConfig(epochs=5))
    routed = SwitchMemPolicy(actor, router, tau=0.0)

    def both() -> None:  # both memory prompts, with their hidden states (what h_I - h_T at run time needs)
        feats = [actor.featurise(x) for x in xs]
        actor.act_features(feats, ["text"] * BATCH, output_hidden_states=True)
        actor.act_features(feats, ["image"] * BATCH, output_hidden_states=True)

    text_inputs = [x.with_modality("text") for x in xs]
    t = alternating({"fixed": lambda: actor.act(text_inputs), "routed": lambda: routed.act(xs), "both": both})
    feats = [actor.featurise(x) for x in xs]
    parts = alternating({  # where a routed step's time goes, per batch
        "featurise": lambda: [actor.featurise(x) for x in xs],
        "memory_free_forward": lambda: actor.act_features(feats, ["none"] * BATCH, output_hidden_states=True),
        "candidate_embeddings": lambda: [actor.memory_embeddings(feats, m) for m in ("text", "image")],
        "text_forward": lambda: actor.act_features(feats, ["text"] * BATCH),
        "image_forward": lambda: actor.act_features(feats, ["image"] * BATCH),
    })
    h = alternating({"plain": lambda: actor.act_features(feats, ["text"] * BATCH),
                     "hidden": lambda: actor.act_features(feats, ["text"] * BATCH, output_hidden_states=True)})
    result = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": 1},
        "batch": BATCH, "cpu_s_per_step": {k: v / BATCH for k, v in t.items()},
        "routed_over_fixed": t["routed"] / t["fixed"], "both_over_fixed": t["both"] / t["fixed"],
        "both_over_routed": t["both"] / t["routed"], "hidden_over_plain": h["hidden"] / h["plain"],
        "image_share_routed": float(np.mean([o.info["modality"] == "image" for o in routed.act(xs)])),
        "cpu_s_per_step_parts": {k: v / BATCH for k, v in parts.items()},
        "memory_free_over_text_forward": parts["memory_free_forward"] / parts["text_forward"],
        "prompt_tokens": {m: int(collate(feats, [m] * BATCH, actor.config, actor.vocab)["attention_mask"].sum(1)
                                 .float().mean()) for m in ("none", "text", "image")},
    }
    write_json(OUT, result)
    return result


if __name__ == "__main__":
    print(main())

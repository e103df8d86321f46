"""Benchmark of SwitchMem's routing cost, on the miniature actor and on a Hugging Face VLM (random
weights; one CPU thread). Every ratio is of two times measured side by side in one run, alternating,
the fastest of ``REPEATS`` CPU times each.

**Hugging Face VLM** (``hf_*``): a tiny random Qwen2-VL (4 decoder layers of width 128, a one-block
vision tower) on prompts of a real model's size: a recorded screenshot of the bundled sample at
the phone's 1080 x 2400 (about 1,000 visual tokens after the processor's resize), a memory block of
about 300 text tokens, or one earlier recorded screen as the memory image (about 380 visual
tokens), and a JSON answer of ``MAX_NEW_TOKENS`` tokens. One step per call (batch 1):

* **fixed**: ``act`` on the text-memory prompt, or on the image-memory prompt: one full pass and decoding;
* **routed**: :class:`guimem.routing.policy.SwitchMemPolicy` on the prefix-sharing actor: the shared
  prefix once, the memory-free state on its cache (the question's few tokens), the candidates'
  embeddings, the router, then the chosen memory suffix on the same cache and decoding. Its τ is set
  so that it chooses text, then image: each is timed against the fixed step of the rendering it
  chose, and ``routed_over_fixed`` is the larger of the two ratios;
* **both evaluated**: the prefix once, then the text and the image suffix on its cache, each with
  hidden states and decoding (``both_over_routed`` divides by the dearer routed step);
* **hidden states**: ``act`` with and without ``output_hidden_states``.

Targets (issue 28): routed ≤ 1.15 x fixed; hidden states ≤ 1.10 x plain; both / routed reported.

**Miniature** (the other keys): the default actor config on batches of ``BATCH`` realistic prompts
(those of ``bench_actor.py``: a 180x360 screen with 12 labelled rows, a ~120-word memory block, a
memory image), each measured end to end from the raw inputs (featurising included):

* **fixed**: the actor on the text-memory prompt (one memory prompt per step);
* **routed**: :class:`guimem.routing.policy.SwitchMemPolicy` — the memory-free forward pass (its
  hidden state is the router's state), the candidates' embeddings, the MLP, then the chosen prompt;
* **both evaluated**: the actor run on the text *and* the image prompt with hidden states (what
  choosing by comparing the two answers, or reading ``h_I - h_T`` at run time, would cost);
* **hidden states**: a plain forward against one with ``output_hidden_states=True``.

Targets (issue "SwitchMem end to end"): routed ≤ 1.15 x fixed (the router's overhead); both evaluated
≥ 2 x routed; hidden states ≤ 1.10 x plain. The miniature's memory comes before the screen's tokens,
so it shares no prefix: its routed step runs the memory-free prompt and the chosen one in full.

All ratios are written, met or not, with where a routed step's time goes (for the VLM: the prefix,
the memory-free state, the candidates' embeddings, a text and an image suffix; for the miniature:
featurising, the memory-free forward, the candidates' embeddings, a text and an image forward,
measured in turn) and the prompt lengths in tokens under each rendering. Writes
``benchmarks/results/routing.json``. Run: ``python benchmarks/bench_routing.py`` (two to three
minutes on an idle 2-core machine).
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import numpy as np
import torch
from bench_actor import MEMORY_TEXT, inputs
from PIL import Image

from guimem.actors.hf.policy import HFVLMActor
from guimem.actors.hf.tiny import tiny_random_qwen2_vl
from guimem.actors.mini.config import ActorConfig
from guimem.actors.mini.features import collate
from guimem.actors.mini.model import GuiActor
from guimem.actors.mini.policy import MiniActor
from guimem.actors.mini.train import build_vocabulary
from guimem.core.data import Action
from guimem.core.io import write_json
from guimem.core.policy import PolicyInput
from guimem.routing.policy import SwitchMemPolicy
from guimem.routing.router import RouterConfig, train_router
from guimem.train.examples import ActorExample

BATCH = 32
REPEATS = 5
OUT = Path(__file__).parent / "results" / "routing.json"
SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "android_world_simple_calendar"
PHONE = (1080, 2400)  # the recorded phone's screen in pixels (the sample's screenshots are stored downscaled)
MAX_NEW_TOKENS = 25  # a JSON action's length in tokens (a random model never stops early)
HF_LAYERS, HF_WIDTH, HF_IMAGE_TOKENS = 4, 128, 1024  # the tiny VLM, and its processor's cap on an image's tokens
MEMORY_TOKENS = 300  # the memory block's length (the tiny tokenizer reads a token per byte)


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


def hugging_face_step() -> PolicyInput:
    """One step of a real model's size: a recorded screen at the phone's resolution, ~300 memory tokens,
    an earlier recorded screen as the memory image, four earlier actions."""
    screens = sorted(SAMPLE.glob("*/screenshot_*.png"))
    memory_text = (MEMORY_TEXT * (MEMORY_TOKENS // len(MEMORY_TEXT.encode()) + 1)).encode()[:MEMORY_TOKENS].decode()
    history = (Action("open_app", text="Simple Calendar Pro"), Action("tap", point=(0.9, 0.05)), Action("back"),
               Action("swipe", point=(0.5, 0.8), end=(0.5, 0.3)))
    return PolicyInput(Image.open(screens[0]).convert("RGB").resize(PHONE), (), "What is my next upcoming event?",
                       history, memory_text, Image.open(screens[1]).convert("RGB"))


def hugging_face() -> dict:
    """The routing ratios of a prefix-sharing Hugging Face VLM (see the module docstring)."""
    model, processor = tiny_random_qwen2_vl(n_layers=HF_LAYERS, d_model=HF_WIDTH, max_image_tokens=HF_IMAGE_TOKENS)
    actor = HFVLMActor.from_model(model, processor, max_new_tokens=MAX_NEW_TOKENS)
    step = hugging_face_step()
    rng = np.random.default_rng(0)
    router = train_router(*(rng.normal(size=(64, HF_WIDTH)) for _ in range(3)), rng.normal(size=64),
                          RouterConfig(epochs=5))
    to_text = SwitchMemPolicy(actor, router, tau=np.inf)  # every step routed to text ...
    to_image = SwitchMemPolicy(actor, router, tau=-np.inf)  # ... or to image: each against its own fixed step
    text, image = step.with_modality("text"), step.with_modality("image")

    def both() -> None:  # both renderings on one prefix, with hidden states
        actor.act_conditions([step], ["text", "image"], ["text", "image"])

    t = alternating({"fixed_text": lambda: actor.act([text]), "routed_text": lambda: to_text.act([step]),
                     "fixed_image": lambda: actor.act([image]), "routed_image": lambda: to_image.act([step]),
                     "both": both})
    h = alternating({"plain": lambda: actor.act([text]), "hidden": lambda: actor.act([text], output_hidden_states=True)})
    shared = actor.open_prefix([step])
    parts = alternating({  # where a routed step's time goes
        "prefix": lambda: actor.open_prefix([step]),
        "memory_free_state": lambda: actor.continued_states(shared, [step.with_modality("none")]),
        "candidate_embeddings": lambda: [actor.memory_embeddings([step], m) for m in ("text", "image")],
        "text_suffix": lambda: actor.continue_prefix(shared, [text]),
        "image_suffix": lambda: actor.continue_prefix(shared, [image]),
    })
    assert [o.info["modality"] for o in to_text.act([step]) + to_image.act([step])] == ["text", "image"]
    tokens = {m: actor.act([step.with_modality(m)])[0].info["prompt_tokens"] for m in ("none", "text", "image")}
    return {
        "model": f"tiny random Qwen2-VL: {HF_LAYERS} layers of width {HF_WIDTH}, a one-block vision tower",
        "batch": 1, "max_new_tokens": MAX_NEW_TOKENS, "prompt_tokens": tokens,
        "shared_prefix_tokens": shared.length, "cpu_s_per_step": t,
        "routed_over_fixed_text": t["routed_text"] / t["fixed_text"],
        "routed_over_fixed_image": t["routed_image"] / t["fixed_image"],
        "routed_over_fixed": max(t["routed_text"] / t["fixed_text"], t["routed_image"] / t["fixed_image"]),
        "both_over_routed": t["both"] / max(t["routed_text"], t["routed_image"]),
        "hidden_over_plain": h["hidden"] / h["plain"],
        "cpu_s_per_step_parts": parts,
    }


def main() -> dict:
    torch.set_num_threads(1)
    hf = hugging_face()
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
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "cpus": os.cpu_count(),
                    "torch_threads": 1},
        "hf_routed_over_fixed": hf["routed_over_fixed"], "hf_both_over_routed": hf["both_over_routed"],
        "hf_hidden_over_plain": hf["hidden_over_plain"], "hugging_face": hf,
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

"""SwitchMem's whole offline protocol on a GPU, for a machine that has one: a tiny random Qwen2-VL
in bf16 on CUDA, on recorded-size steps, timed phase by phase.

What it runs, in order, each phase timed with the device synchronised:

1. **records** (:func:`guimem.routing.records.collect_records`): every step under none, text, image
   and both on one pass of its shared prefix (:meth:`~guimem.actors.hf.policy.HFVLMActor.act_conditions`),
   ``N_SAMPLES`` sampled actions per rendering, every layer's hidden state at the final prompt token,
   the candidates' embeddings;
2. **probe**: the layer curve of the probe on ``h_I - h_T`` (cross-validated by episode);
3. **router**: the shared MLP scorer trained on the memory-free state and the candidates, its
   label-free τ;
4. **Table 1**: fixed renderings, SwitchMem and ratio-matched random, under both step rules;
5. **routed steps**: :class:`~guimem.routing.policy.SwitchMemPolicy` answering every step (the
   prefix once, the memory-free state on its cache, the chosen suffix), against ``act`` on the
   text-memory prompt: the routed / fixed ratio on the GPU.

The steps are the bundled sample's recorded screens at the phone's 1080 x 2400 (about 1,000 visual
tokens each), each with a memory block of about 300 tokens and an earlier screen as its memory
image; the targets are the recorded actions. A random model answers at random: the numbers say how
long the protocol takes and that it runs end to end, nothing about SwitchMem's accuracy.

Run: ``make bench-gpu`` (set-up, then this script), or after ``make setup``
``.venv/bin/python benchmarks/gpu_offline_protocol.py``.
Writes ``benchmarks/results/gpu_offline_protocol.json``. Without a CUDA device it says so and exits
0 without writing anything: nothing else in the project depends on it. ``--cpu`` runs the same
protocol on the CPU in float32 on 8 steps and writes nothing (a check of the script itself).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from bench_actor import MEMORY_TEXT

from guimem.actors.hf.policy import HFVLMActor
from guimem.actors.hf.tiny import tiny_random_qwen2_vl
from guimem.core.policy import PolicyInput
from guimem.core.store import load_screenshot
from guimem.eval.action_match import MatchConfig
from guimem.real.importers import IMPORTERS
from guimem.routing.policy import SwitchMemPolicy
from guimem.routing.probe import CurveConfig, ProbeConfig, layer_curve
from guimem.routing.records import SampledPreference, collect_records
from guimem.routing.route_scores import route_records, table_one
from guimem.routing.router import RouterConfig, calibrate_tau, train_router
from guimem.train.examples import ActorExample

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "gpu_offline_protocol.json"
SAMPLE = ROOT / "samples" / "android_world_simple_calendar"
N_STEPS = 64  # steps recorded (the sample's 28 recorded steps, cycled with other goals)
BATCH = 8  # prompts per forward pass
N_SAMPLES = 8  # sampled actions per step and rendering
MAX_NEW_TOKENS = 25  # a JSON action's length in tokens
LAYERS, WIDTH = 8, 256  # the tiny VLM's depth and width


def steps(n: int, store: Path) -> list:
    """``n`` recorded-size steps with their recorded actions as targets (the sample imported to ``store``)."""
    importer, _ = IMPORTERS["agent_run"]
    episodes = importer(SAMPLE, store, ocr=False)
    recorded = [(e, j) for e in episodes for j in range(len(e.steps))]
    memory_text = (MEMORY_TEXT * 3).encode()[:300].decode()
    out = []
    for i in range(n):
        episode, j = recorded[(3 * i) % len(recorded)]  # every third step: a few steps span every run
        step = episode.steps[j]
        screen = load_screenshot(store, step.screenshot).convert("RGB")
        earlier, k = recorded[(i + 7) % len(recorded)]
        memory = load_screenshot(store, earlier.steps[k].screenshot).convert("RGB")
        history = tuple(s.action for s in episode.steps[max(0, j - 4):j])
        inp = PolicyInput(screen.resize((1080, 2400)), step.elements, f"{episode.goal} (variant {i // len(recorded)})",
                          history, memory_text, memory)
        out.append(ActorExample(inp, step.action, f"{episode.id}-{i // len(recorded)}", i, "smg"))
    return out


def timed(fn):
    """``(result, seconds)`` of ``fn()``, the device synchronised before and after."""
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    start = time.perf_counter()
    result = fn()
    sync()
    return result, time.perf_counter() - start


def main(cpu: bool = False) -> dict | None:
    if not cpu and not torch.cuda.is_available():
        print("gpu_offline_protocol: no CUDA device here: skipping (nothing written)")
        return None
    with tempfile.TemporaryDirectory(prefix="gpu_protocol_") as scratch:
        return protocol(cpu, Path(scratch) / "store")


def protocol(cpu: bool, store: Path) -> dict:
    """The protocol's phases on the CPU or the GPU, the sample imported to ``store``."""
    device = "cpu" if cpu else "cuda"
    dtype = torch.float32 if cpu else torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    model, processor = tiny_random_qwen2_vl(n_layers=LAYERS, d_model=WIDTH, max_image_tokens=1024)
    actor = HFVLMActor.from_model(model.to(device, dtype=dtype), processor, max_new_tokens=MAX_NEW_TOKENS,
                                  batch_size=BATCH)
    examples, build_s = timed(lambda: steps(8 if cpu else N_STEPS, store))
    size = examples[0].input.screenshot.size
    rules = {"aitw": MatchConfig("aitw"), "learngui": MatchConfig("learngui", screen_size_px=size)}
    times = {"build_steps": build_s}
    records, times["records"] = timed(lambda: collect_records(actor, examples, rules, SampledPreference(N_SAMPLES),
                                                              seed=0, batch_size=BATCH, progress=False))
    # the probe learns on the non-tied steps; a random model's may be too few, and then (a timing only)
    # every step with a random label
    preference = records.preference("aitw")
    fitted = records.non_tied("aitw") if min((preference > 0).sum(), (preference < 0).sum()) >= 2 else records
    labels = (fitted.preference("aitw") > 0 if fitted is not records
              else np.random.default_rng(0).random(len(records)) < 0.5)
    folds = min(3, len(set(fitted.episodes)))  # by episode
    curve, times["probe"] = timed(lambda: layer_curve(fitted.shift(), labels, fitted.episodes,
                                                      ProbeConfig(pca_dim=4), CurveConfig(folds, 50)))
    router, times["router"] = timed(lambda: train_router(fitted.hidden["none"][:, -1], fitted.candidates["text"],
                                                         fitted.candidates["image"], np.where(labels, 1.0, -1.0),
                                                         RouterConfig()))
    scores, _ = route_records(router, records)
    router.tau = calibrate_tau(scores, 0.5)
    table, times["table_one"] = timed(lambda: table_one(records, {"switchmem": router.route(scores)},
                                                        ["aitw", "learngui"]))
    inputs = [ex.input for ex in examples]
    routed = SwitchMemPolicy(actor, router)
    text = [x.with_modality("text") for x in inputs]
    _, times["fixed_text_steps"] = timed(lambda: actor.act(text))
    _, times["routed_steps"] = timed(lambda: routed.act(inputs))
    result = {
        "device": "cpu" if cpu else torch.cuda.get_device_name(0), "dtype": str(dtype).replace("torch.", ""),
        "machine": platform.platform(), "model": f"tiny random Qwen2-VL, {LAYERS} layers of width {WIDTH}",
        "steps": len(examples), "batch": BATCH, "n_samples": N_SAMPLES, "max_new_tokens": MAX_NEW_TOKENS,
        "prompt_tokens": {c: int(np.mean([o.info["prompt_tokens"] for o in actor.act([x.with_modality(c)
                                                                                      for x in inputs[:BATCH]])]))
                          for c in ("none", "text", "image")},
        "seconds": {k: round(v, 3) for k, v in times.items()},
        "routed_over_fixed": times["routed_steps"] / times["fixed_text_steps"],
        "table_one": table, "probe_auc_last_layer": curve[-1].get("auc"),
        "probe_steps": "non-tied" if fitted is not records else "every step, random labels (too few non-tied)",
    }
    print(json.dumps(result["seconds"]), f"routed / fixed {result['routed_over_fixed']:.2f}")
    if not cpu:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(result, indent=1, sort_keys=True, default=float) + "\n")
        print(f"-> {OUT}")
    return result


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", action="store_true", help="run on the CPU (float32, 8 steps), writing nothing")
    main(parser.parse_args().cpu)

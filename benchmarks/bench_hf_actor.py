"""Benchmark of the Hugging Face VLM actor on a tiny random Qwen2-VL (CPU, one thread).

Reports answers per CPU second with one input per forward pass and with batches of 8, and
what asking for the hidden states costs: ``act`` with and without ``output_hidden_states``,
and a plain prefill forward with and without it. Writes ``benchmarks/results/hf_actor.json``.

Run: ``python benchmarks/bench_hf_actor.py`` (about a minute on an idle 2-core machine).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch
from PIL import Image

from guimem.actors.hf.policy import HFVLMActor
from guimem.actors.hf.tiny import tiny_random_qwen2_vl
from guimem.core.io import write_json
from guimem.core.policy import PolicyInput

N_INPUTS = 8  # inputs per timed run (one batch of 8)
REPEATS = 3  # timed runs per measurement (the fastest is kept)
MAX_NEW_TOKENS = 16  # answer length budget (a random model rarely stops early)
N_LAYERS, D_MODEL = 4, 128  # the tiny model's depth and width
OUT = Path(__file__).parent / "results" / "hf_actor.json"


def inputs(n: int) -> list[PolicyInput]:
    """``n`` inputs with different goals, half of them with memory as text and image."""
    screen, memory = Image.new("RGB", (180, 320), (30, 120, 200)), Image.new("RGB", (120, 120), (250, 250, 0))
    return [PolicyInput(screen, (), f"open setting number {i}", memory_text="tap Settings" if i % 2 else None,
                        memory_image=memory if i % 2 else None) for i in range(n)]


def best_pair(fn_a, fn_b, repeats: int = REPEATS) -> tuple[float, float]:
    """Shortest CPU times of ``fn_a()`` and ``fn_b()``, run alternately after a warm-up.

    CPU time of this process (torch on one thread), not wall time: on a machine shared with
    other jobs, wall time mostly measures their load. Alternating and keeping the fastest
    run also guards the ratio of the two against drift.
    """
    fn_a(), fn_b()
    times_a, times_b = [], []
    for _ in range(repeats):
        for fn, times in ((fn_a, times_a), (fn_b, times_b)):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
    return min(times_a), min(times_b)


def main() -> dict:
    torch.set_num_threads(1)
    model, processor = tiny_random_qwen2_vl(n_layers=N_LAYERS, d_model=D_MODEL)
    batch = inputs(N_INPUTS)
    single = HFVLMActor.from_model(model, processor, max_new_tokens=MAX_NEW_TOKENS, batch_size=1)
    batched = HFVLMActor.from_model(model, processor, max_new_tokens=MAX_NEW_TOKENS, batch_size=8)
    t_single, t_single_h = best_pair(lambda: single.act(batch), lambda: single.act(batch, output_hidden_states=True))
    t_batched, t_batched_h = best_pair(lambda: batched.act(batch),
                                       lambda: batched.act(batch, output_hidden_states=True))
    enc, _ = batched.encode(batch)
    with torch.inference_mode():
        t_fwd, t_fwd_h = best_pair(lambda: model(**enc), lambda: model(**enc, output_hidden_states=True))
    result = {
        "model": f"tiny random Qwen2-VL, {N_LAYERS} layers, d_model {D_MODEL}",
        "prompt_tokens_mean": statistics.mean(int(n) for n in enc["attention_mask"].sum(1)),
        "max_new_tokens": MAX_NEW_TOKENS,
        "answers_per_cpu_s_single": N_INPUTS / t_single,
        "answers_per_cpu_s_batch8": N_INPUTS / t_batched,
        "forward_cpu_s_batch8": t_fwd,
        "hidden_states_cost_act_single": t_single_h / t_single - 1,  # relative extra time
        "hidden_states_cost_act_batch8": t_batched_h / t_batched - 1,
        "hidden_states_cost_forward_batch8": t_fwd_h / t_fwd - 1,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads 1",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    write_json(OUT, result, indent=2, sort_keys=False)
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))

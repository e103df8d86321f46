"""Benchmark of segmentation: the rule segmenter and judge (episodes/s) and SmolLM2 (seconds per episode).

Measures, on demonstrations of the built-in world (generated in memory, as in ``00_world``):

* the rule segmenter with annotations and the rule judge (``RuleSegmenter.segment``), episodes/s;
* SmolLM2-135M-Instruct: loading from the GGUF file (cold) and from the de-quantized cache
  (warm), and segmenting ``N_LLM`` episodes in each mode (guided, free), seconds per episode,
  with the parse status counts.

Writes ``benchmarks/results/segmentation.json``. Run: ``python benchmarks/bench_segmentation.py``
(several minutes: the cold load alone parses the GGUF file in pure Python). One thread; CPU
seconds beside wall seconds because the machine may be shared.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path

import torch

from guimem.core.io import write_json
from guimem.models.llm import load_llm
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import demonstrate, plan_tasks
from guimem.smg.llm_segmenter import LLMSegmenter
from guimem.smg.segmentation_scores import sample_evenly
from guimem.smg.segmenters import RuleSegmenter

N_RULE = 120  # episodes for the rule segmenter timing
N_LLM = 8  # episodes per LLM mode (the stage's default sample)
OUT = Path(__file__).parent / "results" / "segmentation.json"


def timed(fn):
    """(result, wall seconds, CPU seconds) of ``fn()``."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main() -> dict:
    torch.set_num_threads(1)
    cfg = WorldConfig(n_train=N_RULE, n_test=0)
    episodes, _ = demonstrate(cfg, plan_tasks(cfg, 0)["train"], 0, "train", progress=False)
    rule = RuleSegmenter()
    subgoals, wall, cpu = timed(lambda: [rule.segment(e) for e in episodes])
    result: dict = {
        "rule": {"episodes": len(episodes), "steps": sum(len(e.steps) for e in episodes),
                 "subgoals": sum(map(len, subgoals)), "episodes_per_s_wall": round(len(episodes) / wall, 1),
                 "episodes_per_s_cpu": round(len(episodes) / cpu, 1)},
    }
    with tempfile.TemporaryDirectory() as cache:
        _, cold_wall, cold_cpu = timed(lambda: load_llm(cache_dir=Path(cache)))  # parse the GGUF, fill the cache
        llm, warm_wall, warm_cpu = timed(lambda: load_llm(cache_dir=Path(cache)))
    result["llm_load"] = {"cold_gguf_wall_s": round(cold_wall, 1), "cold_gguf_cpu_s": round(cold_cpu, 1),
                          "warm_cache_wall_s": round(warm_wall, 2), "warm_cache_cpu_s": round(warm_cpu, 2)}
    sample = sample_evenly(episodes, N_LLM)
    for mode in ("guided", "free"):
        seg = LLMSegmenter(llm, mode=mode)
        _, wall, cpu = timed(lambda: [seg.spans(e) for e in sample])
        result[f"llm_{mode}"] = {**seg.stats.summary(), "steps_mean": sum(len(e.steps) for e in sample) / len(sample),
                                 "prompt_tokens_mean": sum(r.prompt_tokens for r in seg.stats.records) / len(sample),
                                 "s_per_episode_wall": round(wall / len(sample), 2),
                                 "s_per_episode_cpu": round(cpu / len(sample), 2)}
    result["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, torch threads 1"
    return result


if __name__ == "__main__":
    out = main()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    write_json(OUT, out, indent=2, sort_keys=False)
    print(json.dumps(out, indent=2))

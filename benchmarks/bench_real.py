"""Benchmark of bringing real recordings in: import, OCR, screen embedding at full size and
downscaled (with what downscaling does to node purity), and loading a store with and without
image verification — side by side in one run.

Source: the full-size recordings in ``../shared/real_samples/android_world_simple_calendar``
(1092x2408 screenshots) when that folder is there, else the repository's downscaled copy
(``samples/``, 363x800; then "full size" is that copy's size). Every measurement is wall time on
this machine with caches off (a fresh OCR reader and embedder per timing, no content cache):

* **import**: steps per second of ``import_agent_runs`` without OCR, keeping the size and
  downscaling to ``DOWNSCALED`` pixels on the longer side (PNG encoding included);
* **OCR**: seconds per screen of :class:`guimem.real.ocr.OcrReader` on the downscaled screens;
* **embedding**: screens per second of EfficientNet-Lite0 on the stored screens at both sizes, and
  the SMG built from each store at τ = 0.9 (rule subgoals, no OCR): nodes and purity against the
  hand labels;
* **loading**: ``load_episodes`` with ``verify_images`` True (every PNG hashed and decoded) and False.

Writes ``benchmarks/results/real.json``. Run: ``python benchmarks/bench_real.py`` (about two
minutes on an idle 2-core machine).
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
from guimem.core.store import load_episodes, load_screenshot
from guimem.models.embedding import embed_screenshots, make_image_embedder, make_text_embedder
from guimem.real.importers.agent_run import import_agent_runs
from guimem.real.ocr import OcrReader
from guimem.smg.graph import build_graph, node_purity
from guimem.smg.segment import make_segmenter, segment_episodes

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "samples" / "android_world_simple_calendar"
FULL = ROOT.parent / "shared" / "real_samples" / "android_world_simple_calendar"
DOWNSCALED = 800
OCR_SCREENS = 8
OUT = Path(__file__).parent / "results" / "real.json"


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> dict:
    torch.set_num_threads(1)
    source = FULL if FULL.is_dir() else BUNDLED
    labels = json.loads((BUNDLED / "screen_labels.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="bench_real_"))
    full, t_full = timed(lambda: import_agent_runs(source, work / "full", labels=labels))
    small, t_small = timed(lambda: import_agent_runs(source, work / "small", labels=labels, max_side=DOWNSCALED))
    steps = sum(len(e.steps) for e in full)
    shots = sorted({o.screenshot for e in small for o in e.observations})[:OCR_SCREENS]
    images = [load_screenshot(work / "small", s) for s in shots]
    reader = OcrReader(cache_dir=None)
    reader.lines(images[0])  # loads the models
    _, t_ocr = timed(lambda: [reader.lines(im) for im in images])
    result = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": 1},
        "source": str(source.relative_to(ROOT.parent)), "steps": steps,
        "screen_size": {"full": list(load_screenshot(work / "full", full[0].steps[0].screenshot).size),
                        "downscaled": list(images[0].size)},
        "import_steps_per_s": {"full": steps / t_full, f"max_side_{DOWNSCALED}": steps / t_small},
        "ocr_s_per_screen": t_ocr / len(images),
    }
    texts = make_text_embedder("minilm")
    embedding, graphs = {}, {}
    for name, store, episodes in (("full", work / "full", full), (f"max_side_{DOWNSCALED}", work / "small", small)):
        screens = sorted({o.screenshot for e in episodes for o in e.observations})
        embedder = make_image_embedder("efficientnet_lite0")
        embed_screenshots(embedder, store, screens[:2])  # warm-up
        _, t = timed(lambda: embed_screenshots(embedder, store, screens))
        embedding[name] = len(screens) / t
        subgoals = segment_episodes(episodes, make_segmenter("rule"), progress=False)
        g = build_graph(subgoals, embedder, texts, store, tau=0.9, theta=0.9)
        screen_of = {o.screenshot: o.screen for e in episodes for o in e.observations}
        graphs[name] = {"nodes": g.n_nodes, "purity": node_purity(g, screen_of)}
    result["embed_screens_per_s"] = embedding
    result["smg_tau_0.9"] = graphs
    _, t_verify = timed(lambda: load_episodes(work / "full", verify_images=True))
    _, t_plain = timed(lambda: load_episodes(work / "full", verify_images=False))
    result["load_s"] = {"verify_images": t_verify, "no_verify": t_plain, "ratio": t_verify / t_plain}
    write_json(OUT, result)
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))

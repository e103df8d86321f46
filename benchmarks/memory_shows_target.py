"""Does the memory image show what a step needs, in training as at test? The study behind the
actor's unread picture (issue 26).

On a step whose target is a bare icon (role ``icon``, no words), the memory image can tell which
icon to touch only if a crop of its strip is *the same* glyph as the target (the pixel-match codes
then point from the crop to the live icon). This counts, per memory kind, over the label-free touch
steps:

- ``shown``: the share whose memory image holds a crop the same as the target;
- ``points_at_target``: the share where the live icon the first such crop matches is the target
  (what a reader that follows the picture would touch);

beside the number of steps with a memory image and of label-free touch steps among them, for
the training examples as the ``actor`` stage builds them (each phone's memories rebuilt in k
folds from its other tasks' training episodes, every memory kind per step) and for the held-out
steps (the evaluation phone's memory, as ``retrieval_eval`` rendered it). Behaviour cloning learns
to follow the picture only as far as following it is right in training.

Reads the workspace's ``data/`` (run ``dvc repro retrieval_eval`` first); writes
``benchmarks/results/memory_shows_target.json``. About two minutes on 2 cores. Run::

    python benchmarks/memory_shows_target.py
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

import yaml

from guimem.actors.mini.augment import SAME, label_free_icons
from guimem.actors.mini.config import ActorConfig
from guimem.actors.mini.features import ImagePatcher, pixel_alike, touched
from guimem.core.data import group_by_episode
from guimem.core.io import write_json
from guimem.core.store import load_episodes, load_subgoals
from guimem.models.embedding import embed_screenshots
from guimem.pipeline.verify import machine
from guimem.smg.memories import MEMORIES, crop_slots, load_memories, memory_embedders
from guimem.train.examples import ActorExample, examples_from_retrieval
from guimem.train.folds import build_kfold_examples, fold_memories, rebuild_from

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).parent / "results" / "memory_shows_target.json"


def count(examples: Sequence[ActorExample], crop_size: int) -> dict[str, float | int]:
    """``shown`` and ``points_at_target`` over the label-free touch steps of ``examples`` with an
    image, and how many steps had an image (``steps``) and how many of them such a target."""
    patcher = ImagePatcher(max_cache=0)
    n = shown = right = steps = 0
    for ex in examples:
        inp = ex.input
        steps += inp.memory_image is not None
        target = touched(ex.target, inp.elements)
        if inp.memory_image is None or target is None or target not in label_free_icons(inp.elements):
            continue
        alike = pixel_alike(patcher.crops(inp.screenshot, [e.bounds for e in inp.elements], crop_size),
                            patcher.crops(inp.memory_image, crop_slots(inp.memory_image.size), crop_size))  # [n_elements, n_slots]
        same = alike == SAME
        first = next((int(same[:, j].nonzero()[0]) for j in range(same.shape[1]) if same[:, j].any()), None)
        n, shown, right = n + 1, shown + bool(same[target].any()), right + (first == target)
    return {"steps": steps, "label_free_steps": n, "shown": round(shown / n, 4) if n else None,
            "points_at_target": round(right / n, 4) if n else None}


def main() -> None:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    actor, graph = params["actor"], params["graph_build"]
    seed, world = params["base"]["seed"], ROOT / "data" / "world"
    shape = ActorConfig(**actor["model"])
    cache = str(ROOT / ".cache" / "guimem" / "embeddings")
    t0 = time.perf_counter()
    train = load_episodes(world / "train", verify_images=False)
    test = load_episodes(world / "test", verify_images=False)
    subgoals = group_by_episode(load_subgoals(ROOT / "data" / "segmentation" / "train.jsonl", store_root=world / "train"))
    images, _ = memory_embedders(ROOT / "data" / "graph_build", graph["image_embedder"], graph["text_embedder"], cache)
    saved = load_memories(ROOT / "data" / "graph_build", graph["image_embedder"], graph["text_embedder"],
                          store_root=world / "memory", cache_dir=cache)
    queries = embed_screenshots(images, world / "train", [s.screenshot for e in train for s in e.steps])
    rebuild = rebuild_from(saved, subgoals, world / "train")
    folds = fold_memories(train, rebuild, MEMORIES, actor["k_folds"], seed)
    training = build_kfold_examples(train, world / "train", rebuild, MEMORIES, actor["k_folds"], seed, None,
                                    shape.max_history, query_vectors=queries, progress=False, folds=folds)
    held = examples_from_retrieval(test, world / "test", ROOT / "data" / "retrieval_eval", MEMORIES, shape.max_history)
    out = {"what": __doc__.split("\n\n")[0].replace("\n", " "),
           "training": {k: count([ex for ex in training if ex.memory_kind == k], shape.crop_size) for k in MEMORIES},
           "held_out": {k: count([ex for ex in held if ex.memory_kind == k], shape.crop_size) for k in MEMORIES},
           "machine": machine(), "seconds": round(time.perf_counter() - t0, 1)}
    write_json(OUT, out)
    for split in ("training", "held_out"):
        for kind, c in out[split].items():
            print(f"{split:9s} {kind:13s} steps {c['steps']:5d}  label-free targets {c['label_free_steps']:4d}  shown {c['shown']}  "
                  f"points at the target {c['points_at_target']}")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

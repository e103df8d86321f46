"""Retrieval evaluation: does a memory bring back experience relevant to what happens next?

On held-out test episodes, step by step, each memory is queried with the step's screenshot
and the episode's goal. Against the world's ground truth (analysis only; no memory reads it):

- **hit@k**: the true subgoal type of the step (what the demonstrator did next from this
  screen) is among the subgoal types of the first ``k`` retrieved items. An item's types are
  the ground-truth types of the past steps it covers (one for a step, usually one for a
  subgoal, all of a trajectory's for a task item, which makes Task-Graph's hit@k lenient);
- **hit@shown**: the same over the items the actor is shown (``RenderStyle.max_items``);
- **failures**: the share of shown items labelled ``no`` by the judge;
- **block size**: tokens of the rendered text block (the actor's tokenizer).

The retrieved memory of every test step is written for the actor stage:
``<out>/<memory>/steps.jsonl`` (episode, step, shown and all item ids, the text block, the
image path) and ``<out>/<memory>/images/<sha>.png``, the rendered image, content-addressed
by the shown item ids (steps that retrieve the same items share one file). The folder is saved
with the kind ``guimem.retrieval`` (:func:`guimem.core.io.atomic_write_dir`); reading it back
(:func:`read_results`) checks every record, and that its image is the one its shown ids name.
Both renderings come from :class:`~guimem.smg.reader.MemoryReader`, the actor's one road to a
memory, and :func:`saved_renderings` hands them back as the actor is shown them.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from guimem.core.data import DataError, Episode
from guimem.core.io import (
    atomic_write_dir,
    check_number,
    file_inside,
    read_jsonl,
    readable_dir,
    relative_path,
    write_jsonl,
)
from guimem.core.progress import progress_bar
from guimem.core.store import png_bytes
from guimem.models.embedding import ImageEmbedder, embed_screenshots
from guimem.smg.index import check_k
from guimem.smg.memories import MEMORIES, MemoryItem, Retrieved, count_tokens
from guimem.smg.reader import MemoryReader

RETRIEVAL_KIND = "guimem.retrieval"
STEPS_FILE, IMAGES = "steps.jsonl", "images"
_IMAGE = re.compile(r"^images/[0-9a-f]{16}\.png$")


@dataclass(frozen=True)
class StepQuery:
    """One test step: where the agent is, what it wants, and (for scoring only) what it did next."""

    episode_id: str
    step: int
    screenshot: str  # relative to the test store
    goal: str
    true_type: str | None  # ground-truth subgoal type of this step (None: unlabelled)
    phone: Any = None  # the phone the step ran on (:attr:`~guimem.core.data.Episode.phone`)


@dataclass(frozen=True)
class StepResult:
    """What one memory returned for one test step, and how it scored."""

    query: StepQuery
    retrieved: Retrieved
    shown: tuple[str, ...]  # ids of the items rendered for the actor
    text: str  # the rendered memory block
    tokens: int
    hits: dict[int, bool]  # k -> hit@k
    hit_shown: bool
    failures_shown: int  # shown items labelled "no"
    seconds: float  # retrieval time (query embedding excluded)
    other_phone_shown: int = 0  # shown items from an episode on another phone than the step's


def step_queries(episodes: Sequence[Episode]) -> list[StepQuery]:
    """Every step of every episode, in order."""
    return [StepQuery(ep.id, i, s.screenshot, ep.goal, s.subgoal.type if s.subgoal is not None else None, ep.phone)
            for ep in episodes for i, s in enumerate(ep.steps)]


def item_types(item: MemoryItem, episodes: Mapping[str, Episode]) -> frozenset[str]:
    """The ground-truth subgoal types of the past steps an item covers (analysis only)."""
    ep = episodes[item.episode_id]
    return frozenset(s.subgoal.type for s in ep.steps[item.first_step: item.last_step + 1] if s.subgoal is not None)


def _hit(items: Sequence[MemoryItem], true_type: str | None, episodes: Mapping[str, Episode]) -> bool:
    return true_type is not None and any(true_type in item_types(i, episodes) for i in items)


def evaluate_memory(memory: Any, queries: Sequence[StepQuery], query_vectors: Mapping[str, np.ndarray],
                    train_episodes: Mapping[str, Episode], ks: Sequence[int] = (1, 3, 5), k: int | None = None,
                    progress: bool = False) -> list[StepResult]:
    """Query ``memory`` for every step and score it.

    Args:
        memory: a :class:`guimem.smg.memories.Memory` built from the training episodes.
        queries: the test steps (see :func:`step_queries`).
        query_vectors: the image embedding of each test screenshot (same embedder as the memory).
        train_episodes: the episodes the memory was built from, by id (their labels type the items).
        ks: the k of hit@k (items, best first).
        k: anchors per query (nodes or subgoals); None: the memory's default.
    """
    ks = [check_k(kk, "ks") for kk in ks]
    missing = sorted({q.screenshot for q in queries} - set(query_vectors))
    if missing:
        raise DataError("query_vectors", f"no embedding for {len(missing)} test screenshot(s), e.g. {missing[0]!r}")
    reader = MemoryReader(memory, "text", k)
    out = []
    for q in progress_bar(queries, desc=f"retrieval [{memory.name}]", unit="step", disable=not progress):
        t0 = time.perf_counter()
        r = reader.retrieve(query_vectors[q.screenshot], q.goal)
        seconds = time.perf_counter() - t0
        shown = r.items[: memory.style.max_items]
        text, _ = reader.render(r)
        out.append(StepResult(q, r, tuple(i.id for i in shown), text, count_tokens(text),
                              {kk: _hit(r.items[:kk], q.true_type, train_episodes) for kk in ks},
                              _hit(shown, q.true_type, train_episodes), sum(i.success == "no" for i in shown),
                              seconds, sum(train_episodes[i.episode_id].phone != q.phone for i in shown)))
    return out


def embed_queries(embedder: ImageEmbedder, store_root: str | Path, queries: Sequence[StepQuery],
                  progress: bool = False) -> dict[str, np.ndarray]:
    """The image embedding of every distinct test screenshot."""
    return embed_screenshots(embedder, store_root, [q.screenshot for q in queries], progress=progress)


def summarize(results: Sequence[StepResult], latency: bool = False) -> dict[str, float]:
    """Means over steps: hit@k, hit@shown, failure share, the share of shown items from another phone
    than the step's (0 where memory is the step's own phone's experience), items, tokens; with
    ``latency``, the median retrieval time in ms (left out by default: it varies between runs,
    metrics must not). The hit rates are over the steps with a true subgoal type, NaN where none
    has one (recorded runs without subgoal labels: nothing to score against)."""
    labelled = [r for r in results if r.query.true_type is not None]
    n = len(labelled)
    ks = sorted(results[0].hits) if results else []
    shown = [len(r.shown) for r in results]
    ms = np.array([r.seconds * 1000 for r in results]) if results else np.zeros(1)
    summary = {f"hit@{k}": sum(r.hits[k] for r in labelled) / n if n else math.nan for k in ks}
    summary.update({
        "hit@shown": sum(r.hit_shown for r in labelled) / n if n else math.nan,
        "failure_share_shown": sum(r.failures_shown for r in results) / max(1, sum(shown)),
        "other_phone_share_shown": sum(r.other_phone_shown for r in results) / max(1, sum(shown)),
        "items_retrieved": float(np.mean([len(r.retrieved.items) for r in results])) if results else 0.0,
        "items_shown": float(np.mean(shown)) if results else 0.0,
        "tokens_mean": float(np.mean([r.tokens for r in results])) if results else 0.0,
        "tokens_p95": float(np.percentile([r.tokens for r in results], 95)) if results else 0.0,
        "empty_share": sum(not r.shown for r in results) / max(1, len(results)),
        "steps": len(results),
    })
    if latency:
        summary["latency_ms_p50"] = float(np.percentile(ms, 50))
    return summary


def image_name(shown: Sequence[str]) -> str:
    """The content-addressed file name of a rendered memory image."""
    return hashlib.sha256("\n".join(shown).encode()).hexdigest()[:16] + ".png"


def write_results(out_dir: str | Path, memory: Any, results: Sequence[StepResult],
                  store_root: str | Path | None = None, progress: bool = False) -> Path:
    """Write ``steps.jsonl`` and the distinct memory images of one memory, atomically."""
    if memory.name not in MEMORIES:  # it names the folder
        raise DataError("memory", f"unknown memory {memory.name!r:.60}; expected one of {MEMORIES}")

    reader = MemoryReader(memory, "image", store_root=store_root)

    def write(folder: Path) -> None:
        (folder / IMAGES).mkdir()
        records = []
        for r in progress_bar(results, desc=f"writing [{memory.name}]", unit="step", disable=not progress):
            name = image_name(r.shown)
            if not (folder / IMAGES / name).exists():
                (folder / IMAGES / name).write_bytes(png_bytes(reader.image(r.retrieved)))
            records.append(step_record(r, f"{IMAGES}/{name}"))
        write_jsonl(folder / STEPS_FILE, records)

    return atomic_write_dir(Path(out_dir) / memory.name, write, kind=RETRIEVAL_KIND,
                            owned=(STEPS_FILE, IMAGES))


def step_record(r: StepResult, image: str) -> dict[str, Any]:
    """One line of ``steps.jsonl``: what the memory retrieved and showed at one test step, which later
    stages read. Its hit@k are left out: they depend on the evaluation's ``ks``, which must not
    change what later stages read (they go to the stage's results); ``hit_shown`` does not."""
    return {"episode_id": r.query.episode_id, "step": r.query.step, "screenshot": r.query.screenshot,
            "shown": list(r.shown), "retrieved": list(r.retrieved.ids), "nodes": [list(n) for n in r.retrieved.nodes],
            "text": r.text, "tokens": r.tokens, "image": image, "hit_shown": r.hit_shown}


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """The records of a ``steps.jsonl`` written by :func:`write_results`, each checked: its fields'
    types, and an image file inside the folder, the one its shown ids name. Use :func:`results_dir`
    for the folder that was read (a crash between a save's renames leaves only its backup)."""
    folder = readable_dir(Path(path).parent, "retrieval results")  # or the backup a crashed save left
    path = file_inside(folder, Path(path).name, "file", str(path))  # not a link out of its folder
    out, images = [], set()  # images: those already found inside the folder
    steps: dict[tuple[str, int], dict] = {}  # (episode, step) -> its record
    for lineno, r in read_jsonl(path):
        where = f"{path}, line {lineno}"
        _check_record(r, where)
        if steps.setdefault((r["episode_id"], r["step"]), r) != r:  # a reader keys by step: the last would win
            raise DataError("step", f"a second, different record of episode {r['episode_id']!r:.60} step {r['step']}",
                            where)
        if r["image"] != f"{IMAGES}/{image_name(r['shown'])}":
            raise DataError("image", f"the shown items name {IMAGES}/{image_name(r['shown'])}, "
                                     f"not {r['image']!r:.60}", where)
        if r["image"] not in images and not file_inside(path.parent, r["image"], "image", where).is_file():
            raise DataError("image", f"{r['image']!r} does not exist", where)
        images.add(r["image"])
        out.append(r)
    return out


def results_dir(retrieval_dir: str | Path, memory: str) -> Path:
    """The folder holding ``memory``'s results under ``retrieval_dir`` (or the backup a crashed save left)."""
    return readable_dir(Path(retrieval_dir) / memory, "retrieval results")


def saved_renderings(retrieval_dir: str | Path, memory: str) -> dict[tuple[str, int], tuple[str, Path]]:
    """What ``memory`` showed at every test step, as saved under ``retrieval_dir``:
    ``(episode id, step) -> (text block, image file)``."""
    folder = results_dir(retrieval_dir, memory)
    return {(r["episode_id"], int(r["step"])): (r["text"], folder / r["image"])
            for r in read_results(folder / STEPS_FILE)}


_RECORD_TYPES: dict[str, type | tuple[type, ...]] = {
    "episode_id": str, "screenshot": str, "text": str, "image": str, "shown": list, "retrieved": list,
    "nodes": list, "hit_shown": bool}


def _check_record(r: Any, where: str) -> None:
    """Refuse a ``steps.jsonl`` record whose fields are missing or of the wrong type."""
    if not isinstance(r, dict):
        raise DataError("record", f"expected an object, got {type(r).__name__}", where)
    for key, kind in _RECORD_TYPES.items():
        if not isinstance(r.get(key), kind):
            raise DataError(key, f"expected {kind.__name__}, got {r.get(key)!r:.60}", where)
    check_number(r.get("step"), "step", lo=0, integer=True, path=where)
    check_number(r.get("tokens"), "tokens", lo=0, integer=True, path=where)
    for key in ("shown", "retrieved"):
        if not all(isinstance(i, str) for i in r[key]):
            raise DataError(key, "expected a list of item ids", where)
    if r["retrieved"][: len(r["shown"])] != r["shown"]:  # the actor is shown the first items retrieved
        raise DataError("shown", "expected the first of the retrieved items", where)
    for j, n in enumerate(r["nodes"]):
        if not isinstance(n, list) or len(n) != 2:
            raise DataError(f"nodes[{j}]", f"expected [node, cosine], got {n!r:.60}", where)
        check_number(n[0], f"nodes[{j}]", lo=0, integer=True, path=where)
        check_number(n[1], f"nodes[{j}]", lo=-1 - 1e-6, hi=1 + 1e-6, path=where)
    relative_path(r["screenshot"], "screenshot", where)
    if not _IMAGE.match(r["image"]):
        raise DataError("image", f"expected images/<16 hex digits>.png, got {r['image']!r:.60}", where)


def by_true_type(results: Iterable[StepResult], k: int) -> dict[str, tuple[int, float]]:
    """Per true subgoal type: (steps, hit@k) — where a memory helps and where it does not."""
    table: dict[str, list[bool]] = {}
    for r in results:
        if r.query.true_type is not None:
            table.setdefault(r.query.true_type, []).append(r.hits[k])
    return {t: (len(v), sum(v) / len(v)) for t, v in sorted(table.items())}

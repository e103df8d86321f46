"""Imported recordings as the pipeline's three episode stores, so that segmentation, graph build
and retrieval evaluation (01-03) run on them as they run on the built-in world's.

The world writes ``train/`` (what an actor learns from), ``test/`` (what is replayed against a
memory) and ``memory/`` (past experience the memories are built from). Recordings come as one
set of runs; :func:`split_counts` shares them out by weight and :func:`write_splits` draws which
run goes where with a seeded permutation (a run is never in two splits) and saves each split as
an episode store beside the others, its manifest naming the import it came from.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from guimem.core.data import DataError, Episode
from guimem.core.io import atomic_write_dirs, check_number, readable_dir, refuse_overlap
from guimem.core.store import SPLITS, StoredScreens, episodes_write, load_episodes, read_manifest


def split_counts(n: int, weights: Sequence[float]) -> tuple[int, ...]:
    """How many of ``n`` runs each split gets: in proportion to ``weights`` (rounded by largest
    remainders, ties to the earlier split), then at least one for every split of positive weight
    (taken from the largest split), none for a split of weight 0. Fewer runs than such splits is a
    DataError naming ``split``."""
    if len(weights) != len(SPLITS):
        raise DataError("split", f"expected {len(SPLITS)} weights ({', '.join(SPLITS)}), got {list(weights)!r:.80}")
    for w in weights:
        check_number(w, "split", lo=0.0)
    wanted = [i for i, w in enumerate(weights) if w > 0]
    if not wanted:
        raise DataError("split", "every weight is 0: no split gets a run")
    if n < len(wanted):
        raise DataError("split", f"{n} runs cannot fill {len(wanted)} splits "
                                 f"({', '.join(SPLITS[i] for i in wanted)}) with one run each")
    total = sum(weights)
    share = [n * w / total for w in weights]
    counts = [int(s) for s in share]
    for i in sorted(wanted, key=lambda i: (-(share[i] - int(share[i])), i))[:n - sum(counts)]:
        counts[i] += 1
    for i in wanted:  # a split asked for gets a run, from the largest
        if counts[i] == 0:
            counts[max(range(len(counts)), key=lambda j: (counts[j], -j))] -= 1
            counts[i] = 1
    return tuple(counts)


def assign_splits(episodes: Sequence[Episode], weights: Sequence[float], seed: int) -> dict[str, list[Episode]]:
    """``episodes`` shared out over :data:`~guimem.core.store.SPLITS` by :func:`split_counts`, which
    run goes where drawn by a permutation seeded with ``seed`` of the runs sorted by id (so the
    draw does not depend on the order a recording lists them); each split in id order."""
    counts = split_counts(len(episodes), weights)
    ordered = sorted(episodes, key=lambda e: e.id)
    drawn = [ordered[i] for i in np.random.default_rng(seed).permutation(len(ordered))]
    out, at = {}, 0
    for name, count in zip(SPLITS, counts):
        out[name] = sorted(drawn[at:at + count], key=lambda e: e.id)
        at += count
    return out


def write_splits(store: str | os.PathLike, out_dir: str | os.PathLike, weights: Sequence[float], seed: int,
                 ) -> dict[str, list[Episode]]:
    """Save the episodes of the store ``store`` (an import) as ``out_dir/{train,test,memory}``
    episode stores (:func:`assign_splits`), each manifest's meta naming the import and the split.
    The split and every screenshot file are checked before the first store is written, and the
    three stores are saved as one (:func:`guimem.core.io.atomic_write_dirs`): after a crash at any
    instant they are the old draw or the new one, never a mix (a mix would put an episode in two
    splits). Returns each split's episodes as stored."""
    root = readable_dir(store, "episode store")  # or the backup a crashed save left
    for name in SPLITS:  # a split written into (or around) its source corrupts it
        refuse_overlap(root, Path(out_dir) / name, "out_dir", str(Path(out_dir) / name))
    episodes = load_episodes(root)  # fully verified: the splits are rehashed, so a swapped screen must fail here
    parts = assign_splits(episodes, weights, seed)
    meta: dict[str, Any] = {"recorded": read_manifest(root).get("meta", {}), "split_weights": list(weights),
                            "split_seed": seed}
    keys = {name: {o.screenshot for e in part for o in e.recorded_observations} for name, part in parts.items()}
    for key in sorted(set().union(*keys.values())):
        if not (root / key).is_file():
            raise DataError("screenshot", "missing, or not a file", str(root / key))
    atomic_write_dirs([episodes_write(part, StoredScreens(root, keys[name]), Path(out_dir) / name,
                                      meta={**meta, "split": name}) for name, part in parts.items()])
    return {name: load_episodes(Path(out_dir) / name, verify_images=False) for name in parts}

"""The hand-made memory graph of the graph's bad-input cases (and the consistency cases'), and edits
of its saved files: three nodes, two edges (one a failure) and one episode, on one-hot vectors of
dimension :data:`D`; each edit is a mutation of a saved graph folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np

from guimem.core.data import Subgoal
from guimem.smg.graph import GraphConfig, MemoryGraph

D = 4
CONFIG = GraphConfig("hand", D, "hand-text", D, 0.9, 0.9)
E = np.eye(D, dtype=np.float32)


def sub(eid: str, index: int, first: int, last: int, text: str = "open it", success: str = "yes",
        shot: str | None = None) -> Subgoal:
    return Subgoal(eid, index, first, last, shot or f"{eid}/s{first}.png", f"{eid}/s{last + 1}.png", text,
                   "", "", success, None)


def graph() -> MemoryGraph:
    """Three nodes, two edges (one a failure), one episode."""
    g = MemoryGraph(CONFIG)
    g.add_episode([sub("e0", 0, 0, 0), sub("e0", 1, 1, 1, "close it", "no")],
                  {"e0/s0.png": E[0], "e0/s1.png": E[1], "e0/s2.png": E[2]}, np.stack([E[0], E[1]]))
    return g


def edit_json(name: str, change: Callable[[Any], Any]) -> Callable[[Path], None]:
    """A mutation rewriting the JSON file ``name`` with ``change(document)`` (in place or returned)."""
    def mutate(folder: Path) -> None:
        doc = json.loads((folder / name).read_text())
        out = change(doc)
        (folder / name).write_text(json.dumps(doc if out is None else out))
    return mutate


def manifest(**values: Any) -> Callable[[Path], None]:
    return edit_json("manifest.json", lambda m: m.update(values))


def edit_edges(change: Callable[[list], Any]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        rows = [json.loads(line) for line in (folder / "edges.jsonl").read_text().splitlines()]
        change(rows)
        (folder / "edges.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return mutate


def array(name: str, change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        x = np.load(folder / name)
        np.save(folder / name, change(x.copy()), allow_pickle=True)
    return mutate


def set_node(i: int, **values: Any) -> Callable[[Path], None]:
    return edit_json("nodes.json", lambda nodes: nodes[i].update(values))

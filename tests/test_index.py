"""Node search: HNSW agrees with exact search on small graphs (the same graph, node for node), takes
over at its threshold, is reproducible, and its settings are checked and saved with a memory."""

from __future__ import annotations

import numpy as np
import pytest

from guimem.core.data import DataError
from guimem.smg.graph import GraphConfig, MemoryGraph, normalize_rows
from guimem.smg.graph_load import load_graph
from guimem.smg.index import HnswNodeIndex, NodeIndex, NodeSearch

HNSW = NodeSearch(kind="hnsw")


def clustered(n_screens: int, n_types: int, dim: int = 32, noise: float = 0.12, seed: int = 0) -> np.ndarray:
    """Unit screen vectors around ``n_types`` random centres (the miniature of a memory's screens)."""
    rng = np.random.default_rng(seed)
    centres = normalize_rows(rng.normal(size=(n_types, dim)))
    return normalize_rows(centres[rng.integers(0, n_types, n_screens)] + noise * rng.normal(size=(n_screens, dim))
                          / np.sqrt(dim))


def build(vectors: np.ndarray, search: NodeSearch) -> MemoryGraph:
    graph = MemoryGraph(GraphConfig("synthetic", vectors.shape[1], "none", 4, tau=0.9), search)
    for i, v in enumerate(vectors):
        graph.add_screen(v, f"screens/{i}.png")
    return graph


def nodes_of(graph: MemoryGraph) -> list[list[str]]:
    return [graph.node_screenshots(n) for n in range(graph.n_nodes)]


def test_hnsw_builds_the_same_graph_as_exact_search():
    vectors = clustered(3000, 300)
    exact, approx = build(vectors, NodeSearch(kind="exact")), build(vectors, HNSW)
    assert approx.index.approximate and not isinstance(exact.index, HnswNodeIndex)
    assert nodes_of(approx) == nodes_of(exact)  # every screen merged into the same node, in the same order
    np.testing.assert_array_equal(approx.node_sums, exact.node_sums)
    queries = clustered(200, 300, seed=1)
    assert [approx.nearest_nodes(q, 3) for q in queries] == [exact.nearest_nodes(q, 3) for q in queries]


def test_auto_is_exact_below_its_threshold_and_hnsw_from_there():
    index = NodeSearch(kind="auto", exact_below=100).make(16)
    rows = normalize_rows(np.random.default_rng(0).normal(size=(150, 16)))
    index.extend(rows[:99])
    assert not index.approximate
    index.append(rows[99])
    assert index.approximate and index.ann.get_current_count() == 100  # built from every row so far
    index.extend(rows[100:])
    index.update(3, rows[7])  # a node's mean moved: HNSW finds it where it is now
    assert index.ann.get_current_count() == 150
    ids, scores = index.topk(rows[7], 2)
    assert sorted(ids.tolist()) == [3, 7] and np.allclose(scores, 1.0)


def test_recall_at_one_against_exact_search():
    rows = normalize_rows(np.random.default_rng(0).normal(size=(20_000, 32)))
    exact, approx = NodeIndex(32), HNSW.make(32)
    exact.extend(rows)
    approx.extend(rows)
    queries = normalize_rows(rows[:500] + 0.3 * np.random.default_rng(1).normal(size=(500, 32)) / np.sqrt(32))
    hits = sum(int(approx.topk(q, 1)[0][0]) == int(exact.topk(q, 1)[0][0]) for q in queries)
    assert hits / len(queries) >= 0.99


def test_builds_are_reproducible():
    vectors = clustered(2000, 400, seed=3)
    first, second = build(vectors, HNSW), build(vectors, HNSW)
    assert nodes_of(first) == nodes_of(second)
    queries = clustered(50, 400, seed=4)
    assert [first.nearest_nodes(q, 5) for q in queries] == [second.nearest_nodes(q, 5) for q in queries]


def test_a_saved_graph_loads_with_the_search_asked_for(tmp_path):
    graph = build(clustered(500, 50), NodeSearch(kind="exact"))
    graph.save(tmp_path / "g")
    loaded = load_graph(tmp_path / "g", search=HNSW)
    assert loaded.index.approximate and nodes_of(loaded) == nodes_of(graph)
    q = clustered(1, 50, seed=9)[0]
    assert loaded.nearest_nodes(q, 2) == graph.nearest_nodes(q, 2)


@pytest.mark.parametrize("settings, field", [
    ({"kind": "faiss"}, "node_index"), ({"exact_below": -1}, "exact_below"), ({"m": 0}, "m"),
    ({"ef_search": 4, "candidates": 8}, "ef_search"), ({"seed": 1.5}, "seed"),
])
def test_bad_settings_are_refused(settings, field):
    with pytest.raises(DataError, match=field):
        NodeSearch(**settings)


def test_a_memory_keeps_its_node_search(tmp_path):
    from guimem.models.embedding import HashingTextEmbedder, PixelEmbedder
    from guimem.smg.memories import load_memory, make_memory

    images, texts = PixelEmbedder(4, 8), HashingTextEmbedder(16)
    for name in ("smg", "flat"):
        memory = make_memory(name, images, texts, search=NodeSearch(kind="auto", exact_below=7))
        memory.save(tmp_path / name)
        assert load_memory(tmp_path / name, images, texts).search == NodeSearch(kind="auto", exact_below=7)
    with pytest.raises(DataError, match="node_search"):
        NodeSearch.from_dict({"kind": "exact", "leaves": 3})

"""The Subgoal-aware Memory Graph (SMG): merged screens as nodes, subgoals as edges.

The method, as DESIGN.md states it:

* **Nodes.** A screen (a unit image embedding) merges into the most similar node when their
  cosine is >= ``tau`` (inclusive), else it starts a new node. A node keeps the exact sum of
  its screens' embeddings and their count (the running mean is ``sum / count``; its cosine
  uses the normalised mean, i.e. ``sum / |sum|``) and the screenshots that merged into it.
* **Edges.** Every subgoal becomes one directed edge from the node of its first screen to the
  node of its last (the screen after its last action), carrying all the subgoal's metadata
  and the embedding of its intent text. Per source node, a new edge is a *duplicate* and
  dropped (the earlier one kept) when an existing edge from that node has the same target
  node, the same success label and an intent cosine >= ``theta`` (inclusive).
* **Retrieval.** The top-k nodes by cosine to the query screen (k=1 by default) and all their
  outgoing edges, successes *and* failures, in a fixed order: nodes by decreasing cosine
  (ties: lower node id), then edges by id (ingest order).

Ingest order (what makes a build reproducible and incremental == batch): episodes in the
order given; within an episode, its *boundary screens* (every subgoal's first screen and the
screen after its last action, each distinct step position once) in step order, then its
subgoal edges in subgoal-index order. Adding episodes to a saved graph gives exactly the
graph built from all of them in one go; an episode already ingested (same id, same content
hash) adds nothing; the same id with different content is refused.

Similarity search is exact and vectorised (:class:`NodeIndex`): a float32 scan picks
candidates, which are then scored in float64 on the stored vectors, so the answer never
depends on how the scan was blocked.

On disk (a folder, plain files, no pickle): ``manifest.json`` (format version, embedders and
their dimensions, ``tau``, ``theta``, counts), ``nodes.json``, ``edges.jsonl``,
``episodes.json`` (ingested ids and content hashes, in order), ``node_sums.npy`` (float64
``[nodes, image_dim]``) and ``edge_intents.npy`` (float32 ``[edges, text_dim]``). Node
screenshots are paths relative to the episode store the graph was built from. A save writes a
sibling temp folder and swaps it in, so a crash leaves the previous graph readable.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import networkx as nx
import numpy as np

from guimem.core.data import DataError, Subgoal, group_by_episode
from guimem.core.io import atomic_write_dir, readable_dir
from guimem.models.embedding import ImageEmbedder, TextEmbedder, embed_screenshots

FORMAT = "guimem.memory_graph"
FORMAT_VERSION = 1
MANIFEST, NODES, EDGES, EPISODES = "manifest.json", "nodes.json", "edges.jsonl", "episodes.json"
NODE_SUMS, EDGE_INTENTS = "node_sums.npy", "edge_intents.npy"


# ============================================================================ exact search
def exact_scores(rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise dot products in float64, each a function of its row and ``q`` only."""
    return np.einsum("ij,j->i", rows.astype(np.float64), q.astype(np.float64), optimize=False)  # [n]


def _top(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best ``(id, score)`` pairs: score descending, ties to the lower id."""
    order = np.lexsort((ids, -scores))[:k]
    return ids[order], scores[order]


class NodeIndex:
    """Exact top-k cosine search over unit vectors that are appended and updated in place.

    The answer is defined as the ``k`` rows with the highest float64 dot product with the
    query (ties: lower row id). One float32 matrix-vector product over all rows (the
    vectorised scan) keeps every row within ``2 * dim * 2**-24`` of the k-th best (twice the
    worst-case float32 rounding error of a dot product of unit vectors); only those few are
    rescored in float64, row by row, so the answer never depends on BLAS blocking.
    """

    def __init__(self, dim: int):
        self.dim = dim
        self._x = np.zeros((64, dim), dtype=np.float32)  # [capacity, dim] unit rows
        self.n = 0
        self.margin = 2.0 * dim * 2.0 ** -24

    @property
    def vectors(self) -> np.ndarray:
        """``[n, dim]`` float32 view of the stored unit vectors."""
        return self._x[: self.n]

    def _reserve(self, n: int) -> None:
        if n > len(self._x):
            grown = np.zeros((max(n, 2 * len(self._x)), self.dim), dtype=np.float32)
            grown[: self.n] = self._x[: self.n]
            self._x = grown

    def append(self, v: np.ndarray) -> int:
        """Store a unit vector; returns its row id."""
        self._reserve(self.n + 1)
        self._x[self.n] = v
        self.n += 1
        return self.n - 1

    def update(self, i: int, v: np.ndarray) -> None:
        """Replace row ``i`` (a node's mean moved)."""
        self._x[i] = v

    def extend(self, vectors: np.ndarray) -> None:
        """Append many rows at once (loading a saved graph)."""
        self._reserve(self.n + len(vectors))
        self._x[self.n: self.n + len(vectors)] = vectors
        self.n += len(vectors)

    def topk(self, q: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Row ids ``[k']`` and float64 cosines ``[k']`` of the ``k' = min(k, n)`` best rows."""
        n = self.n
        if n == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        k = min(k, n)
        q = np.asarray(q, dtype=np.float32)
        s = self._x[:n] @ q  # [n] float32
        kth = s.max() if k == 1 else np.partition(s, n - k)[n - k]
        candidates = np.flatnonzero(s >= kth - self.margin)
        return _top(candidates, exact_scores(self._x[candidates], q), k)


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` scaled to unit norm in float64, returned as float32 (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0).astype(np.float32)


def _unit(vector: np.ndarray) -> np.ndarray:
    """A vector scaled to unit norm in float64, as float32 (unchanged when its norm is exactly 1)."""
    return normalize_rows(np.asarray(vector, dtype=np.float32)[None])[0]


# ============================================================================ the graph
@dataclass(frozen=True)
class GraphConfig:
    """What a graph was built with; a loaded graph must match the caller's embedders."""

    image_embedder: str  # name of the screen embedder (cache key and manifest field)
    image_dim: int
    text_embedder: str  # name of the intent-text embedder
    text_dim: int
    tau: float = 0.9  # merge a screen into its nearest node at cosine >= tau
    theta: float = 0.9  # drop an edge as duplicate at intent cosine >= theta (same target, success)


@dataclass(frozen=True)
class Edge:
    """One stored edge: a subgoal (or step) between two nodes, with its intent embedding row."""

    id: int
    source: int
    target: int
    subgoal: Subgoal  # its intent embedding is row ``id`` of :attr:`MemoryGraph.edge_intents`


@dataclass(frozen=True)
class NodeHit:
    """A retrieved node, its cosine to the query, and its outgoing edges in order."""

    node: int
    score: float
    edges: tuple[Edge, ...]


@dataclass
class IngestReport:
    """What one ``add`` did."""

    episodes_added: int = 0
    episodes_skipped: int = 0  # already ingested with the same content
    screens: int = 0  # boundary screens ingested
    nodes_created: int = 0
    edges_added: int = 0
    edges_dropped: int = 0  # duplicates


def episode_hash(subgoals: Sequence[Subgoal]) -> str:
    """sha256 of an episode's subgoals (canonical JSON, in index order)."""
    payload = json.dumps([s.to_dict() for s in subgoals], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def boundary_screens(subgoals: Sequence[Subgoal]) -> list[tuple[int, str]]:
    """An episode's distinct ``(step position, screenshot)`` pairs in step order.

    A subgoal's first screen sits at ``first_step``; the screen after its last action at
    ``last_step + 1`` (the next subgoal's first screen, when they are contiguous).
    """
    screens: dict[int, str] = {}
    for s in subgoals:
        for pos, shot in ((s.first_step, s.from_screenshot), (s.last_step + 1, s.to_screenshot)):
            if screens.setdefault(pos, shot) != shot:
                raise DataError("from_screenshot", f"episode {s.episode_id!r}: step {pos} has two screenshots "
                                f"({screens[pos]!r} and {shot!r})")
    return sorted(screens.items())


class MemoryGraph:
    """The SMG on a networkx ``MultiDiGraph``; build with :meth:`add_episode`, query with :meth:`retrieve`."""

    def __init__(self, config: GraphConfig):
        self.config = config
        self.graph = nx.MultiDiGraph()
        self.index = NodeIndex(config.image_dim)
        self._sums = np.zeros((64, config.image_dim), dtype=np.float64)  # [capacity, image_dim]
        self._intents = np.zeros((64, config.text_dim), dtype=np.float32)  # [capacity, text_dim]
        self.edges: list[Edge] = []
        self.episodes: dict[str, str] = {}  # episode id -> content hash, in ingest order
        self.subgoals_seen = 0  # every subgoal offered as an edge, duplicates included
        self.duplicates_dropped = 0

    # ------------------------------------------------------------------ sizes
    @property
    def n_nodes(self) -> int:
        return self.graph.number_of_nodes()

    @property
    def n_edges(self) -> int:
        return len(self.edges)

    @property
    def node_sums(self) -> np.ndarray:
        """``[nodes, image_dim]`` float64 exact sums of merged screen embeddings."""
        return self._sums[: self.n_nodes]

    @property
    def node_means(self) -> np.ndarray:
        """``[nodes, image_dim]`` float32 normalised means (what similarity search uses)."""
        return self.index.vectors

    @property
    def edge_intents(self) -> np.ndarray:
        """``[edges, text_dim]`` float32 intent embeddings."""
        return self._intents[: self.n_edges]

    # ------------------------------------------------------------------ building
    def add_screen(self, vector: np.ndarray, screenshot: str) -> int:
        """Merge a unit screen embedding into its nearest node (cosine >= tau) or make a new node."""
        v = _unit(vector)
        ids, scores = self.index.topk(v, 1)
        if len(ids) and scores[0] >= self.config.tau:
            node = int(ids[0])
            self._sums[node] += v
            attrs = self.graph.nodes[node]
            attrs["count"] += 1
            if screenshot not in attrs["screenshots"]:
                attrs["screenshots"].append(screenshot)
            self.index.update(node, normalize_rows(self._sums[node: node + 1])[0])
            return node
        node = self.n_nodes
        if node == len(self._sums):
            self._sums = np.concatenate([self._sums, np.zeros_like(self._sums)])
        self._sums[node] = v
        self.graph.add_node(node, count=1, screenshots=[screenshot])
        self.index.append(normalize_rows(self._sums[node: node + 1])[0])
        return node

    def is_duplicate(self, source: int, target: int, success: str, intent: np.ndarray) -> bool:
        """Whether an edge from ``source`` has this target and success and intent cosine >= theta."""
        rows = [key for _, t, key, ok in self.graph.out_edges(source, keys=True, data="success")
                if t == target and ok == success]
        if not rows:
            return False
        cosines = exact_scores(self._intents[rows], _unit(intent))
        return bool((cosines >= self.config.theta).any())

    def add_edge(self, source: int, target: int, subgoal: Subgoal, intent: np.ndarray) -> Edge | None:
        """Store a subgoal edge unless it duplicates an earlier one from ``source``; None if dropped."""
        self.subgoals_seen += 1
        if self.is_duplicate(source, target, subgoal.success, intent):
            self.duplicates_dropped += 1
            return None
        eid = self.n_edges
        if eid == len(self._intents):
            self._intents = np.concatenate([self._intents, np.zeros_like(self._intents)])
        self._intents[eid] = _unit(intent)
        edge = Edge(eid, source, target, subgoal)
        self.edges.append(edge)
        self.graph.add_edge(source, target, key=eid, success=subgoal.success, subgoal_id=subgoal.id)
        return edge

    def add_episode(self, subgoals: Sequence[Subgoal], screen_vectors: Mapping[str, np.ndarray],
                    intent_vectors: np.ndarray, report: IngestReport | None = None) -> IngestReport:
        """Ingest one episode's subgoals (sorted by index) given their embeddings.

        Args:
            subgoals: one episode's subgoals.
            screen_vectors: unit image embedding per screenshot path.
            intent_vectors: ``[len(subgoals), text_dim]`` unit embeddings of ``subgoal.text``.
            report: counts to add to (a new one when None).
        """
        report = report if report is not None else IngestReport()
        if not subgoals:
            return report
        order = sorted(range(len(subgoals)), key=lambda i: subgoals[i].index)
        subgoals = [subgoals[i] for i in order]
        intent_vectors = np.asarray(intent_vectors, dtype=np.float32)[order]  # [len(subgoals), text_dim]
        eid = subgoals[0].episode_id
        if any(s.episode_id != eid for s in subgoals):
            raise DataError("episode_id", f"add_episode got subgoals of several episodes ({eid!r}, ...)")
        digest = episode_hash(subgoals)
        if eid in self.episodes:
            if self.episodes[eid] != digest:
                raise DataError("episode_id", f"episode {eid!r} was already ingested with different subgoals")
            report.episodes_skipped += 1
            return report
        nodes_before = self.n_nodes
        node_at: dict[int, int] = {}
        for pos, shot in boundary_screens(subgoals):
            if shot not in screen_vectors:
                raise DataError("from_screenshot", f"no embedding given for screenshot {shot!r} of episode {eid!r}")
            node_at[pos] = self.add_screen(screen_vectors[shot], shot)
            report.screens += 1
        for s, intent in zip(subgoals, intent_vectors):
            edge = self.add_edge(node_at[s.first_step], node_at[s.last_step + 1], s, intent)
            report.edges_added += edge is not None
            report.edges_dropped += edge is None
        self.episodes[eid] = digest
        report.episodes_added += 1
        report.nodes_created += self.n_nodes - nodes_before
        return report

    # ------------------------------------------------------------------ querying
    def nearest_nodes(self, vector: np.ndarray, k: int = 1) -> list[tuple[int, float]]:
        """The ``k`` most similar nodes and their cosines (descending; ties to the lower id)."""
        ids, scores = self.index.topk(_unit(vector), k)
        return [(int(i), float(s)) for i, s in zip(ids, scores)]

    def out_edges(self, node: int) -> tuple[Edge, ...]:
        """All stored edges leaving ``node``, by edge id."""
        return tuple(self.edges[key] for key in sorted(k for _, _, k in self.graph.out_edges(node, keys=True)))

    def retrieve(self, vector: np.ndarray, k: int = 1) -> list[NodeHit]:
        """The top-k nodes for a query screen embedding, each with all its outgoing edges."""
        return [NodeHit(node, score, self.out_edges(node)) for node, score in self.nearest_nodes(vector, k)]

    # ------------------------------------------------------------------ summaries
    def stats(self) -> dict[str, Any]:
        """Node, edge and dedup counts."""
        seen = self.subgoals_seen
        return {"nodes": self.n_nodes, "edges": self.n_edges, "episodes": len(self.episodes),
                "subgoals_seen": seen, "duplicates_dropped": self.duplicates_dropped,
                "dedup_ratio": self.duplicates_dropped / seen if seen else 0.0,
                "screens_merged": int(sum(c for _, c in self.graph.nodes(data="count"))),
                "self_loops": int(sum(1 for e in self.edges if e.source == e.target))}

    def node_screenshots(self, node: int) -> list[str]:
        """Distinct screenshots merged into ``node``, first seen first."""
        return list(self.graph.nodes[node]["screenshots"])

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> Path:
        """Write the graph as a folder of plain files, atomically (see the module docstring)."""
        return atomic_write_dir(Path(path), self._write_files, kind=FORMAT)

    def _write_files(self, folder: Path) -> None:
        c = self.config
        manifest = {"format": FORMAT, "format_version": FORMAT_VERSION,
                    "image_embedder": c.image_embedder, "image_dim": c.image_dim,
                    "text_embedder": c.text_embedder, "text_dim": c.text_dim,
                    "tau": c.tau, "theta": c.theta, **self.stats()}
        nodes = [{"id": n, "count": d["count"], "screenshots": d["screenshots"]}
                 for n, d in sorted(self.graph.nodes(data=True))]
        _write_json(folder / MANIFEST, manifest)
        _write_json(folder / NODES, nodes)
        _write_json(folder / EPISODES, [{"id": e, "sha256": h} for e, h in self.episodes.items()])
        with open(folder / EDGES, "w", encoding="utf-8") as f:
            for e in self.edges:
                f.write(json.dumps({"id": e.id, "source": e.source, "target": e.target,
                                    "subgoal": e.subgoal.to_dict()}, sort_keys=True) + "\n")
        np.save(folder / NODE_SUMS, self.node_sums, allow_pickle=False)
        np.save(folder / EDGE_INTENTS, self.edge_intents, allow_pickle=False)

    @classmethod
    def load(cls, path: str | Path, expect: GraphConfig | None = None) -> "MemoryGraph":
        """Read a saved graph; with ``expect``, refuse one made with other embedders or dimensions.

        ``tau``/``theta`` come from the manifest (a graph's structure depends on them); a
        caller who wants other thresholds rebuilds.
        """
        folder = readable_dir(Path(path), "saved memory")
        manifest = _read_json(folder / MANIFEST)
        mpath = str(folder / MANIFEST)
        if manifest.get("format") != FORMAT:
            raise DataError("format", f"expected {FORMAT!r}, got {manifest.get('format')!r}", mpath)
        if manifest.get("format_version") != FORMAT_VERSION:
            raise DataError("format_version", f"expected {FORMAT_VERSION}, got {manifest.get('format_version')!r}", mpath)
        try:
            config = GraphConfig(str(manifest["image_embedder"]), int(manifest["image_dim"]),
                                 str(manifest["text_embedder"]), int(manifest["text_dim"]),
                                 float(manifest["tau"]), float(manifest["theta"]))
        except KeyError as err:
            raise DataError(err.args[0], "missing", mpath) from None
        if expect is not None:
            for name in ("image_embedder", "image_dim", "text_embedder", "text_dim"):
                got, want = getattr(config, name), getattr(expect, name)
                if got != want:
                    raise DataError(name, f"graph was built with {name}={got!r} but the caller uses {want!r}; "
                                    "rebuild the graph with this embedder", mpath)
        g = cls(config)
        sums = _read_npy(folder / NODE_SUMS, np.float64, config.image_dim)
        intents = _read_npy(folder / EDGE_INTENTS, np.float32, config.text_dim)
        nodes = _read_json(folder / NODES)
        if not isinstance(nodes, list) or len(nodes) != len(sums):
            raise DataError("nodes", f"{len(nodes) if isinstance(nodes, list) else '?'} nodes but "
                            f"{len(sums)} rows in {NODE_SUMS}", str(folder / NODES))
        for i, d in enumerate(nodes):
            if not isinstance(d, dict) or d.get("id") != i:
                raise DataError(f"[{i}].id", f"expected node id {i}", str(folder / NODES))
            g.graph.add_node(i, count=int(d["count"]), screenshots=list(d["screenshots"]))
        g._sums = sums.copy() if len(sums) else g._sums
        g.index.extend(normalize_rows(sums))
        for line_no, e in enumerate(_read_jsonl(folder / EDGES)):
            try:
                sg = Subgoal.from_dict(e["subgoal"])
                edge = Edge(int(e["id"]), int(e["source"]), int(e["target"]), sg)
            except (KeyError, TypeError, ValueError) as err:
                raise DataError(f"line {line_no + 1}", f"bad edge: {err}", str(folder / EDGES)) from None
            if edge.id != line_no or not (0 <= edge.source < len(sums) and 0 <= edge.target < len(sums)):
                raise DataError(f"line {line_no + 1}", "edge id out of order or node out of range", str(folder / EDGES))
            g.edges.append(edge)
            g.graph.add_edge(edge.source, edge.target, key=edge.id, success=sg.success, subgoal_id=sg.id)
        if len(g.edges) != len(intents):
            raise DataError("edges", f"{len(g.edges)} edges but {len(intents)} rows in {EDGE_INTENTS}",
                            str(folder / EDGES))
        g._intents = intents.copy() if len(intents) else g._intents
        g.episodes = {d["id"]: d["sha256"] for d in _read_json(folder / EPISODES)}
        g.subgoals_seen = int(manifest.get("subgoals_seen", len(g.edges)))
        g.duplicates_dropped = int(manifest.get("duplicates_dropped", 0))
        return g


# ============================================================================ analysis
def node_purity(graph: MemoryGraph, screen_of: Mapping[str, str | None]) -> float:
    """Share of nodes' distinct screenshots whose true screen type is their node's majority type.

    ``screen_of`` maps a screenshot to the world's true screen type (analysis only; None or
    missing screenshots are left out).
    """
    agree = total = 0
    for node in graph.graph.nodes:
        types = [screen_of.get(s) for s in graph.node_screenshots(node)]
        types = [t for t in types if t is not None]
        if types:
            agree += max(types.count(t) for t in set(types))
            total += len(types)
    return agree / total if total else float("nan")


def neighbourhood(graph: MemoryGraph, max_nodes: int) -> list[int]:
    """The most visited node and its nearest neighbours (either edge direction), up to ``max_nodes``."""
    g = graph.graph
    if not g.number_of_nodes():
        return []
    start = min(g.nodes, key=lambda n: (-g.nodes[n]["count"], n))
    dist = nx.single_source_shortest_path_length(g.to_undirected(as_view=True), start)
    return sorted(dist, key=lambda n: (dist[n], -g.nodes[n]["count"], n))[:max_nodes]


def draw_graph(graph: MemoryGraph, store_root: str | Path, ax: Any, max_nodes: int = 12,
               thumb: tuple[int, int] = (24, 48), seed: int = 0) -> list[int]:
    """Draw the most visited node's neighbourhood (screen thumbnails) with edges coloured by success.

    Returns the drawn node ids (see :func:`neighbourhood`). Layout: networkx spring layout
    with ``seed``; a number under a node is its id and how many screens merged into it.
    """
    from matplotlib.offsetbox import AnnotationBbox, OffsetImage

    from guimem.models.embedding import open_image
    from guimem.viz.plotting import SUCCESS_COLORS

    nodes = neighbourhood(graph, max_nodes)
    sub = graph.graph.subgraph(nodes)
    pos = nx.spring_layout(nx.Graph(sub), seed=seed, k=2.0 / max(1, len(nodes)) ** 0.5)
    for u, v, key in sorted(sub.edges(keys=True)):
        success = graph.edges[key].subgoal.success
        rad = 0.0 if u == v else 0.1 + 0.05 * (key % 3)
        ax.annotate("", xy=pos[v], xytext=pos[u], arrowprops=dict(
            arrowstyle="-|>", color=SUCCESS_COLORS[success], lw=0.8, alpha=0.8,
            connectionstyle=f"arc3,rad={rad}", shrinkA=12, shrinkB=12))
    for n in nodes:
        image = open_image(Path(store_root) / graph.node_screenshots(n)[0]).resize(thumb)
        ax.add_artist(AnnotationBbox(OffsetImage(np.asarray(image), zoom=1.0), pos[n], frameon=True, pad=0.1))
        ax.annotate(f"{n} (x{graph.graph.nodes[n]['count']})", pos[n], xytext=(0, -thumb[1] / 2 - 6),
                    textcoords="offset points", ha="center", fontsize=6)
    xs, ys = zip(*pos.values()) if pos else ((0,), (0,))
    ax.set_xlim(min(xs) - 0.25, max(xs) + 0.25)
    ax.set_ylim(min(ys) - 0.3, max(ys) + 0.3)
    ax.set_axis_off()
    return nodes


# ============================================================================ building from data
def add_subgoals(graph: MemoryGraph, subgoals: Sequence[Subgoal], image_embedder: ImageEmbedder,
                 text_embedder: TextEmbedder, store_root: str | Path, progress: bool = False) -> IngestReport:
    """Embed and ingest subgoals (episodes in order of first appearance); returns the counts.

    Episodes already in the graph with the same content are skipped before anything is embedded.
    """
    _check_embedders(graph.config, image_embedder, text_embedder)
    report = IngestReport()
    todo = []
    for eid, group in group_by_episode(subgoals).items():
        if graph.episodes.get(eid) == episode_hash(group):
            report.episodes_skipped += 1
        else:
            todo.append(group)
    shots = [p for group in todo for _, p in boundary_screens(group)]
    screens = embed_screenshots(image_embedder, store_root, shots, progress=progress)
    texts = [s.text for group in todo for s in group]
    intents = text_embedder.embed(texts) if texts else np.zeros((0, graph.config.text_dim), np.float32)
    start = 0
    for group in todo:
        graph.add_episode(group, screens, intents[start: start + len(group)], report)
        start += len(group)
    return report


def build_graph(subgoals: Sequence[Subgoal], image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                store_root: str | Path, tau: float = 0.9, theta: float = 0.9, progress: bool = False) -> MemoryGraph:
    """A new graph from ``subgoals`` (see :func:`add_subgoals`)."""
    config = GraphConfig(image_embedder.name, image_embedder.dim, text_embedder.name, text_embedder.dim, tau, theta)
    graph = MemoryGraph(config)
    add_subgoals(graph, subgoals, image_embedder, text_embedder, store_root, progress)
    return graph


def _check_embedders(config: GraphConfig, image_embedder: ImageEmbedder, text_embedder: TextEmbedder) -> None:
    for name, got, want in (("image_embedder", image_embedder.name, config.image_embedder),
                            ("image_dim", image_embedder.dim, config.image_dim),
                            ("text_embedder", text_embedder.name, config.text_embedder),
                            ("text_dim", text_embedder.dim, config.text_dim)):
        if got != want:
            raise DataError(name, f"the graph uses {want!r} but the embedder given is {got!r}")


# ============================================================================ files
def _write_json(path: Path, obj: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


def _read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise DataError(path.name, "file missing", str(path)) from None
    except json.JSONDecodeError as err:
        raise DataError(f"line {err.lineno}", f"malformed JSON: {err.msg}", str(path)) from None


def _read_jsonl(path: Path) -> list[dict]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataError(path.name, "file missing", str(path)) from None
    out = []
    for i, line in enumerate(lines):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise DataError(f"line {i + 1}", f"malformed JSON: {err.msg}", str(path)) from None
    return out


def _read_npy(path: Path, dtype: type, dim: int) -> np.ndarray:
    try:
        x = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise DataError(path.name, "file missing", str(path)) from None
    except ValueError as err:
        raise DataError(path.name, f"unreadable array: {err}", str(path)) from None
    if x.ndim != 2 or x.shape[1] != dim or x.dtype != dtype:
        raise DataError("shape", f"expected {np.dtype(dtype).name} [n, {dim}], got {x.dtype.name} {list(x.shape)}",
                        str(path))
    return x

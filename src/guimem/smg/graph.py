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

**Stable across machines.** Another CPU may round an embedding's last bits differently, so a
cosine that is exactly ``tau`` in exact arithmetic (two identical screens at ``tau = 1``) can
land a hair below it on one machine and on it on another. Every threshold decision therefore
allows :data:`~guimem.smg.index.COSINE_ATOL` (a cosine counts as >= ``tau`` when it is >= ``tau -
COSINE_ATOL``), and every ranking compares scores rounded to :data:`~guimem.smg.index.RANK_DECIMALS`
decimals, ties to the lower id (:func:`~guimem.smg.index.rank_order`). This absorbs the rounding
of float32 unit vectors (a cosine is within about 1e-7 of its exact value); embedders whose
outputs differ by more than that between machines can still move a decision whose cosine lies
that close to the threshold.

Ingest order (what makes a build reproducible and incremental == batch): episodes in the
order given; within an episode, its *boundary screens* (every subgoal's first screen and the
screen after its last action, each distinct step position once) in step order, then its
subgoal edges in subgoal-index order. Adding episodes to a saved graph gives exactly the
graph built from all of them in one go; an episode already ingested (same id, same content
hash) adds nothing; the same id with different content is refused. An episode is checked
completely (:meth:`MemoryGraph.check_episode`) before the graph changes, so a refused add
leaves the graph as it was.

Similarity search is :mod:`guimem.smg.index`'s: exact and vectorised by default (a float32 scan
picks candidates, scored in float64 on the stored vectors, so the answer never depends on how
the scan was blocked), HNSW for graphs of many nodes (:class:`~guimem.smg.index.NodeSearch`).

On disk (a folder, plain files, no pickle, written by :func:`guimem.core.io.atomic_write_dir`
with the kind ``guimem.memory_graph``): ``manifest.json`` (format version, embedders and their
dimensions, ``tau``, ``theta``, counts), ``nodes.json``, ``edges.jsonl``, ``episodes.json``
(ingested ids and content hashes, in order), ``node_sums.npy`` (float64 ``[nodes, image_dim]``)
and ``edge_intents.npy`` (float32 ``[edges, text_dim]``). Node screenshots are paths relative
to the episode store the graph was built from. :func:`guimem.smg.graph_load.load_graph` reads
the folder back, every file checked.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import networkx as nx
import numpy as np

from guimem.core.data import DataError, Subgoal, group_by_episode
from guimem.core.io import atomic_write_dir, check_finite, check_number, relative_path, write_json, write_jsonl
from guimem.models.embedding import ImageEmbedder, TextEmbedder, embed_screenshots
from guimem.smg.index import NodeSearch, exact_scores, reaches

FORMAT = "guimem.memory_graph"
FORMAT_VERSION = 1
MANIFEST, NODES, EDGES, EPISODES = "manifest.json", "nodes.json", "edges.jsonl", "episodes.json"
NODE_SUMS, EDGE_INTENTS = "node_sums.npy", "edge_intents.npy"
GRAPH_FILES = frozenset({MANIFEST, NODES, EDGES, EPISODES, NODE_SUMS, EDGE_INTENTS})


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` scaled to unit norm in float64, returned as float32 (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0).astype(np.float32)


def _unit(vector: np.ndarray) -> np.ndarray:
    """A vector scaled to unit norm in float64, as float32 (unchanged when its norm is exactly 1)."""
    return normalize_rows(np.asarray(vector, dtype=np.float32)[None])[0]


def checked_vectors(x: Any, shape: tuple[int, ...], field: str, path: str | None = None) -> np.ndarray:
    """``x`` as float32 of exactly ``shape``, finite, with no all-zero vector (last axis); else a DataError."""
    a = np.asarray(x)
    if a.shape != shape or a.dtype.kind not in "fiu":
        raise DataError(field, f"expected numbers of shape {list(shape)}, got {a.dtype.name} {list(a.shape)}", path)
    with np.errstate(over="ignore"):  # a float64 beyond float32's range becomes inf, refused next
        a = check_finite(a.astype(np.float32), field, path)
    zero = ~a.reshape(-1, shape[-1]).any(axis=1) if a.size else np.zeros(0, bool)
    if zero.any():
        raise DataError(field, f"vector {int(np.argmax(zero))} is all zeros (it has no direction)", path)
    return a


# ============================================================================ the graph
@dataclass(frozen=True)
class GraphConfig:
    """What a graph was built with; a loaded graph must match the caller's embedders."""

    image_embedder: str  # name of the screen embedder (cache key and manifest field)
    image_dim: int
    text_embedder: str  # name of the intent-text embedder
    text_dim: int
    tau: float = 0.9  # merge a screen into its nearest node at cosine >= tau (within COSINE_ATOL)
    theta: float = 0.9  # drop an edge as duplicate at intent cosine >= theta (same target, success)

    def __post_init__(self) -> None:
        for name in ("image_embedder", "text_embedder"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise DataError(name, f"expected an embedder name, got {value!r:.60}")
        for name in ("image_dim", "text_dim"):
            check_number(getattr(self, name), name, lo=1, integer=True)
        for name in ("tau", "theta"):  # cosines: a threshold outside [-1, 1] merges (dedups) all or nothing
            check_number(getattr(self, name), name, lo=-1.0, hi=1.0)


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


@dataclass(frozen=True)
class CheckedEpisode:
    """An episode :meth:`MemoryGraph.check_episode` accepted: ready to ingest, nothing left to fail."""

    id: str
    digest: str
    subgoals: tuple[Subgoal, ...]  # by index
    intents: np.ndarray  # [len(subgoals), text_dim] float32, aligned with ``subgoals``
    screens: tuple[tuple[int, str, np.ndarray], ...]  # (step position, screenshot, [image_dim] vector), step order


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


def check_subgoals(subgoals: Any, path: str | None = None) -> list[Subgoal]:
    """``subgoals`` as a list if every item is a :class:`Subgoal` whose screenshots are store-relative paths."""
    out = list(subgoals)
    for i, s in enumerate(out):
        if not isinstance(s, Subgoal):
            raise DataError(f"subgoals[{i}]", f"expected a Subgoal, got {type(s).__name__}", path)
        for name in ("from_screenshot", "to_screenshot"):
            try:
                relative_path(getattr(s, name), name)
            except DataError as err:
                raise DataError(name, f"subgoal {s.id}: {err.message}", path) from None
    return out


class MemoryGraph:
    """The SMG on a networkx ``MultiDiGraph``; build with :meth:`add_episode`, query with :meth:`retrieve`."""

    def __init__(self, config: GraphConfig, search: NodeSearch | None = None):
        self.config = config
        self.search = search if search is not None else NodeSearch()
        self.graph = nx.MultiDiGraph()
        self.index = self.search.make(config.image_dim)
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
        """Merge a screen embedding into its nearest node (cosine >= tau) or make a new node."""
        v = _unit(checked_vectors(vector, (self.config.image_dim,), "vector"))
        return self._add_screen(v, relative_path(screenshot, "screenshot"))

    def _add_screen(self, v: np.ndarray, screenshot: str) -> int:
        ids, scores = self.index.topk(v, 1)
        if len(ids) and reaches(scores[0], self.config.tau):
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
        return bool(reaches(cosines, self.config.theta).any())

    def add_edge(self, source: int, target: int, subgoal: Subgoal, intent: np.ndarray) -> Edge | None:
        """Store a subgoal edge unless it duplicates an earlier one from ``source``; None if dropped."""
        for name, node in (("source", source), ("target", target)):
            if isinstance(node, bool) or not isinstance(node, (int, np.integer)) or node not in self.graph:
                raise DataError(name, f"no node {node!r} in the graph ({self.n_nodes} nodes)")
        if not isinstance(subgoal, Subgoal):
            raise DataError("subgoal", f"expected a Subgoal, got {type(subgoal).__name__}")
        return self._add_edge(int(source), int(target), subgoal,
                              checked_vectors(intent, (self.config.text_dim,), "intent"))

    def _add_edge(self, source: int, target: int, subgoal: Subgoal, intent: np.ndarray) -> Edge | None:
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

    def check_episode(self, subgoals: Sequence[Subgoal], screen_vectors: Mapping[str, np.ndarray],
                      intent_vectors: np.ndarray) -> CheckedEpisode | None:
        """Check one episode's subgoals and embeddings completely, changing nothing; None when the
        episode is already in the graph with the same content (a DataError when with other content).

        Args:
            subgoals: one episode's subgoals (at least one; any order).
            screen_vectors: image embedding ``[image_dim]`` per screenshot path.
            intent_vectors: ``[len(subgoals), text_dim]`` embeddings of ``subgoal.text``, aligned with ``subgoals``.
        """
        subgoals = check_subgoals(subgoals)
        if not subgoals:
            raise DataError("subgoals", "an episode needs at least one subgoal")
        intents = checked_vectors(intent_vectors, (len(subgoals), self.config.text_dim), "intent_vectors")
        order = sorted(range(len(subgoals)), key=lambda i: subgoals[i].index)
        subgoals = [subgoals[i] for i in order]
        eid = subgoals[0].episode_id
        if any(s.episode_id != eid for s in subgoals):
            raise DataError("episode_id", f"add_episode got subgoals of several episodes ({eid!r}, ...)")
        if len({s.index for s in subgoals}) != len(subgoals):
            raise DataError("index", f"episode {eid!r} has two subgoals with the same index")
        digest = episode_hash(subgoals)
        if eid in self.episodes:
            if self.episodes[eid] != digest:
                raise DataError("episode_id", f"episode {eid!r} was already ingested with different subgoals")
            return None
        screens = []
        for pos, shot in boundary_screens(subgoals):
            if shot not in screen_vectors:
                raise DataError("from_screenshot", f"no embedding given for screenshot {shot!r} of episode {eid!r}")
            v = checked_vectors(screen_vectors[shot], (self.config.image_dim,), f"screen_vectors[{shot!r}]")
            screens.append((pos, shot, _unit(v)))
        return CheckedEpisode(eid, digest, tuple(subgoals), intents[order], tuple(screens))

    def ingest(self, episode: CheckedEpisode, report: IngestReport | None = None) -> IngestReport:
        """Add an episode :meth:`check_episode` accepted (with no other episode of its id added since)."""
        report = report if report is not None else IngestReport()
        nodes_before = self.n_nodes
        node_at = {pos: self._add_screen(v, shot) for pos, shot, v in episode.screens}
        report.screens += len(episode.screens)
        for s, intent in zip(episode.subgoals, episode.intents):
            edge = self._add_edge(node_at[s.first_step], node_at[s.last_step + 1], s, intent)
            report.edges_added += edge is not None
            report.edges_dropped += edge is None
        self.episodes[episode.id] = episode.digest
        report.episodes_added += 1
        report.nodes_created += self.n_nodes - nodes_before
        return report

    def holds(self, units: Sequence[Subgoal]) -> bool:
        """Whether the graph holds the episode of ``units`` (one episode's, in index order) with this content."""
        return self.episodes.get(units[0].episode_id) == episode_hash(units)

    def add_episode(self, subgoals: Sequence[Subgoal], screen_vectors: Mapping[str, np.ndarray],
                    intent_vectors: np.ndarray, report: IngestReport | None = None) -> IngestReport:
        """Ingest one episode's subgoals given their embeddings (see :meth:`check_episode`); an
        episode refused with a DataError leaves the graph exactly as it was."""
        report = report if report is not None else IngestReport()
        if len(subgoals) == 0:
            return report
        checked = self.check_episode(subgoals, screen_vectors, intent_vectors)
        if checked is None:
            report.episodes_skipped += 1
            return report
        return self.ingest(checked, report)

    # ------------------------------------------------------------------ querying
    def nearest_nodes(self, vector: np.ndarray, k: int = 1) -> list[tuple[int, float]]:
        """The ``k`` most similar nodes and their cosines (best first, see :func:`rank_order`)."""
        ids, scores = self.index.topk(_unit(checked_vectors(vector, (self.config.image_dim,), "vector")), k)
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
        return atomic_write_dir(Path(path), self.write_files, kind=FORMAT, owned=GRAPH_FILES)

    def write_files(self, folder: Path) -> None:
        """The graph's files into ``folder`` (a memory's save adds its own beside them)."""
        c = self.config
        manifest = {"format": FORMAT, "format_version": FORMAT_VERSION,
                    "image_embedder": c.image_embedder, "image_dim": c.image_dim,
                    "text_embedder": c.text_embedder, "text_dim": c.text_dim,
                    "tau": c.tau, "theta": c.theta, **self.stats()}
        nodes = [{"id": n, "count": d["count"], "screenshots": d["screenshots"]}
                 for n, d in sorted(self.graph.nodes(data=True))]
        write_json(folder / MANIFEST, manifest)
        write_json(folder / NODES, nodes)
        write_json(folder / EPISODES, [{"id": e, "sha256": h} for e, h in self.episodes.items()])
        write_jsonl(folder / EDGES, ({"id": e.id, "source": e.source, "target": e.target,
                                     "subgoal": e.subgoal.to_dict()} for e in self.edges))
        np.save(folder / NODE_SUMS, self.node_sums, allow_pickle=False)
        np.save(folder / EDGE_INTENTS, self.edge_intents, allow_pickle=False)


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


def splits_and_merges(graph: MemoryGraph, screen_of: Mapping[str, str | None]) -> dict[str, dict]:
    """How the nodes sit against true screen types: ``splits`` maps each type to the nodes its
    screenshots went to (more than one: the type was split), ``merges`` maps each node to the
    count of its screenshots of each type (more than one type: different screens were merged).
    Screenshots without a type are left out."""
    splits: dict[str, list[int]] = {}
    merges: dict[int, dict[str, int]] = {}
    for node in sorted(graph.graph.nodes):
        for shot in graph.node_screenshots(node):
            t = screen_of.get(shot)
            if t is None:
                continue
            merges.setdefault(node, {}).setdefault(t, 0)
            merges[node][t] += 1
            if node not in splits.setdefault(t, []):
                splits[t].append(node)
    return {"splits": dict(sorted(splits.items())), "merges": merges}


# ============================================================================ building from data
def add_units(graph: MemoryGraph, episodes: Sequence[Sequence[Subgoal]], image_embedder: ImageEmbedder,
              embed_intents: Callable[[Sequence[Sequence[str]]], Sequence[np.ndarray]], store_root: str | Path,
              progress: bool = False, report: IngestReport | None = None) -> IngestReport:
    """Embed and ingest episodes' units, in the order given: the one ingest path (``GraphMemory.add``,
    :func:`add_subgoals`). ``episodes`` holds each episode's units (empty: nothing to add);
    ``embed_intents`` maps the intents of each episode to be added to one ``[n_units, text_dim]``
    array per episode. How texts are batched is the caller's choice, since a batched encoder's last
    bits can depend on the batch (the built-in ones' do not: MiniLM embeds one text per pass):
    :func:`add_subgoals` embeds them all in one call (:func:`embed_in_one_batch`), a memory one
    episode at a time through its memo.

    Episodes the graph holds with the same content are skipped before anything is embedded. Every
    episode is checked before the first is ingested: a DataError leaves the graph as it was.
    """
    report = report if report is not None else IngestReport()
    todo = []
    for units in episodes:
        if units and graph.holds(units):
            report.episodes_skipped += 1
        elif units:
            todo.append(units)
    shots = [p for units in todo for _, p in boundary_screens(units)]
    screens = embed_screenshots(image_embedder, store_root, shots, progress=progress)
    intents = embed_intents([[u.text for u in units] for units in todo])
    checked = [graph.check_episode(units, screens, vectors) for units, vectors in zip(todo, intents, strict=True)]
    for episode in checked:
        graph.ingest(episode, report)
    return report


def add_subgoals(graph: MemoryGraph, subgoals: Sequence[Subgoal], image_embedder: ImageEmbedder,
                 text_embedder: TextEmbedder, store_root: str | Path, progress: bool = False) -> IngestReport:
    """Embed and ingest subgoals, episodes in order of first appearance (:func:`add_units`); returns the counts."""
    _check_embedders(graph.config, image_embedder, text_embedder)
    episodes = list(group_by_episode(check_subgoals(subgoals)).values())
    return add_units(graph, episodes, image_embedder, embed_in_one_batch(text_embedder), store_root, progress)


def embed_in_one_batch(text_embedder: TextEmbedder) -> Callable[[Sequence[Sequence[str]]], list[np.ndarray]]:
    """An ``embed_intents`` for :func:`add_units` that embeds every episode's intents in one call
    and splits the vectors back by episode."""
    def embed(texts_per_episode: Sequence[Sequence[str]]) -> list[np.ndarray]:
        if not texts_per_episode:
            return []
        texts = [t for episode in texts_per_episode for t in episode]
        vectors = text_embedder.embed(texts) if texts else np.zeros((0, text_embedder.dim), np.float32)
        return np.split(vectors, np.cumsum([len(episode) for episode in texts_per_episode])[:-1])
    return embed


def build_graph(subgoals: Sequence[Subgoal], image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                store_root: str | Path, tau: float = GraphConfig.tau, theta: float = GraphConfig.theta,
                progress: bool = False,
                search: NodeSearch | None = None) -> MemoryGraph:
    """A new graph from ``subgoals`` (see :func:`add_subgoals`), its nodes searched by ``search``."""
    config = GraphConfig(image_embedder.name, image_embedder.dim, text_embedder.name, text_embedder.dim, tau, theta)
    graph = MemoryGraph(config, search)
    add_subgoals(graph, subgoals, image_embedder, text_embedder, store_root, progress)
    return graph


def _check_embedders(config: GraphConfig, image_embedder: ImageEmbedder, text_embedder: TextEmbedder) -> None:
    for name, got, want in (("image_embedder", image_embedder.name, config.image_embedder),
                            ("image_dim", image_embedder.dim, config.image_dim),
                            ("text_embedder", text_embedder.name, config.text_embedder),
                            ("text_dim", text_embedder.dim, config.text_dim)):
        if got != want:
            raise DataError(name, f"the graph uses {want!r} but the embedder given is {got!r}")

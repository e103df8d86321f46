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
allows :data:`COSINE_ATOL` (a cosine counts as >= ``tau`` when it is >= ``tau - COSINE_ATOL``),
and every ranking compares scores rounded to :data:`RANK_DECIMALS` decimals, ties to the lower
id (:func:`rank_order`). This absorbs the rounding of float32 unit vectors (a cosine is within
about 1e-7 of its exact value); embedders whose outputs differ by more than that between
machines can still move a decision whose cosine lies that close to the threshold.

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
to the episode store the graph was built from. Loading checks every file against the manifest
(counts, shapes, dtypes, finite values, ids, paths) and the files against each other (each edge of
an ingested episode, joining the nodes that hold its screenshots; episode hashes; node counts and
sums a merge of unit vectors gives), and names the file and field of a mismatch.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import networkx as nx
import numpy as np

from guimem.core.data import DataError, Subgoal, group_by_episode
from guimem.core.io import (
    atomic_write_dir,
    check_finite,
    check_number,
    file_inside,
    read_json,
    read_jsonl,
    read_npy,
    readable_dir,
    relative_path,
    saved_before_markers,
    write_json,
    write_jsonl,
)
from guimem.core.store import open_image
from guimem.models.embedding import ImageEmbedder, TextEmbedder, embed_screenshots
from guimem.smg.index import (  # noqa: F401  (COSINE_ATOL, RANK_DECIMALS, NodeIndex: named here before index.py)
    COSINE_ATOL,
    RANK_DECIMALS,
    NodeIndex,
    NodeSearch,
    exact_scores,
    rank_order,
    reaches,
)
from guimem.viz.plotting import SUCCESS_COLORS

FORMAT = "guimem.memory_graph"
FORMAT_VERSION = 1
MANIFEST, NODES, EDGES, EPISODES = "manifest.json", "nodes.json", "edges.jsonl", "episodes.json"
NODE_SUMS, EDGE_INTENTS = "node_sums.npy", "edge_intents.npy"
GRAPH_FILES = frozenset({MANIFEST, NODES, EDGES, EPISODES, NODE_SUMS, EDGE_INTENTS})

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


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
        return atomic_write_dir(Path(path), self.write_files, kind=FORMAT, legacy=is_legacy_graph, owned=GRAPH_FILES)

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

    @classmethod
    def load(cls, path: str | Path, expect: GraphConfig | None = None, search: NodeSearch | None = None,
             ) -> "MemoryGraph":
        """Read a saved graph, every file checked against the manifest; with ``expect``, refuse one
        made with other embedders or dimensions; ``search``: how the loaded graph searches its nodes
        (the default :class:`~guimem.smg.index.NodeSearch` when None).

        ``tau``/``theta`` come from the manifest (a graph's structure depends on them); a
        caller who wants other thresholds rebuilds.
        """
        folder = readable_dir(Path(path), "saved memory")
        for name in sorted(GRAPH_FILES):  # a link may not lead out of the folder
            file_inside(folder, name, "file", str(folder / name))
        manifest, config = _read_manifest(folder)
        mpath = str(folder / MANIFEST)
        if expect is not None:
            for name in ("image_embedder", "image_dim", "text_embedder", "text_dim"):
                got, want = getattr(config, name), getattr(expect, name)
                if got != want:
                    raise DataError(name, f"graph was built with {name}={got!r} but the caller uses {want!r}; "
                                    "rebuild the graph with this embedder", mpath)
        count = {key: check_number(manifest.get(key), key, lo=0, integer=True, path=mpath)
                 for key in ("nodes", "edges", "episodes", "subgoals_seen", "duplicates_dropped")}
        g = cls(config, search)
        sums = read_npy(folder / NODE_SUMS, "node_sums", np.float64, (count["nodes"], config.image_dim))
        intents = read_npy(folder / EDGE_INTENTS, "edge_intents", np.float32, (count["edges"], config.text_dim))
        for i, (count_i, shots) in enumerate(_read_nodes(folder / NODES, count["nodes"])):
            g.graph.add_node(i, count=count_i, screenshots=shots)
        g._sums = sums.copy() if len(sums) else g._sums
        g.index.extend(normalize_rows(sums))
        g.episodes = _read_episodes(folder / EPISODES, count["episodes"])
        nodes = [g.graph.nodes[i]["screenshots"] for i in range(count["nodes"])]
        for edge in _read_edges(folder / EDGES, count["edges"], nodes, g.episodes):
            g.edges.append(edge)
            g.graph.add_edge(edge.source, edge.target, key=edge.id, success=edge.subgoal.success,
                             subgoal_id=edge.subgoal.id)
        g._intents = intents.copy() if len(intents) else g._intents
        g.subgoals_seen, g.duplicates_dropped = count["subgoals_seen"], count["duplicates_dropped"]
        if g.subgoals_seen != g.n_edges + g.duplicates_dropped:
            raise DataError("subgoals_seen", f"{g.subgoals_seen} subgoals seen, but {g.n_edges} edges kept and "
                            f"{g.duplicates_dropped} dropped", mpath)
        for key, value in g.stats().items():  # of the same type too: true is not 1, 1.0 is not 1
            if type(manifest.get(key)) is not type(value) or manifest.get(key) != value:
                raise DataError(key, f"the manifest says {manifest.get(key)!r:.40}, the files give {value!r}", mpath)
        _check_vectors(folder, g)
        _check_episode_hashes(folder, g)
        return g


def is_legacy_graph(folder: Path) -> bool:
    """Whether ``folder`` holds exactly a graph saved before kind markers (its manifest names the format)."""
    return saved_before_markers(folder, MANIFEST, lambda m: GRAPH_FILES if isinstance(m, dict)
                                and m.get("format") == FORMAT else None)


def _read_manifest(folder: Path) -> tuple[dict[str, Any], GraphConfig]:
    """The manifest of the graph in ``folder`` and the config it records, both checked."""
    mpath = str(folder / MANIFEST)
    manifest = read_json(folder / MANIFEST)
    if not isinstance(manifest, dict):
        raise DataError("manifest", f"expected an object, got {type(manifest).__name__}", mpath)
    if manifest.get("format") != FORMAT:
        raise DataError("format", f"expected {FORMAT!r}, got {manifest.get('format')!r:.60}", mpath)
    check_number(manifest.get("format_version"), "format_version", lo=FORMAT_VERSION, hi=FORMAT_VERSION,
                 integer=True, path=mpath)  # an integer: true and 1.0 are not version 1
    names = ("image_embedder", "image_dim", "text_embedder", "text_dim", "tau", "theta")
    for name in names:
        if name not in manifest:
            raise DataError(name, "missing", mpath)
    try:
        return manifest, GraphConfig(*(manifest[name] for name in names))
    except DataError as err:
        raise err.at(mpath) from None


def _read_nodes(path: Path, n: int) -> list[tuple[int, list[str]]]:
    """``(count, screenshots)`` of each node in ``nodes.json``, which must hold nodes ``0..n-1`` in order."""
    nodes = read_json(path)
    if not isinstance(nodes, list) or len(nodes) != n:
        got = f"{len(nodes)} nodes" if isinstance(nodes, list) else type(nodes).__name__
        raise DataError("nodes", f"expected a list of the manifest's {n} nodes, got {got}", str(path))
    out = []
    for i, d in enumerate(nodes):
        if not isinstance(d, dict):
            raise DataError(f"[{i}]", f"expected an object, got {type(d).__name__}", str(path))
        check_number(d.get("id"), f"[{i}].id", lo=i, hi=i, integer=True, path=str(path))
        count = check_number(d.get("count"), f"[{i}].count", lo=1, integer=True, path=str(path))
        shots = d.get("screenshots")
        if not isinstance(shots, list) or not shots or len(set(map(str, shots))) != len(shots):
            raise DataError(f"[{i}].screenshots", "expected a non-empty list of distinct paths", str(path))
        if count < len(shots):  # every screenshot merged in counts once at least
            raise DataError(f"[{i}].count", f"{count} screens merged, fewer than its {len(shots)} screenshots",
                            str(path))
        out.append((count, [relative_path(s, f"[{i}].screenshots[{j}]", str(path)) for j, s in enumerate(shots)]))
    return out


def _read_episodes(path: Path, n: int) -> dict[str, str]:
    """Episode id -> content hash from ``episodes.json`` (``n`` distinct ids, in ingest order)."""
    rows = read_json(path)
    if not isinstance(rows, list) or len(rows) != n:
        got = f"{len(rows)} episodes" if isinstance(rows, list) else type(rows).__name__
        raise DataError("episodes", f"expected a list of the manifest's {n} episodes, got {got}", str(path))
    out: dict[str, str] = {}
    for i, d in enumerate(rows):
        if not isinstance(d, dict) or not isinstance(d.get("id"), str) or d["id"] in out:
            raise DataError(f"[{i}].id", "expected a distinct episode id", str(path))
        if not isinstance(d.get("sha256"), str) or not _SHA256.match(d["sha256"]):
            raise DataError(f"[{i}].sha256", f"expected 64 hex digits, got {d.get('sha256')!r:.80}", str(path))
        out[d["id"]] = d["sha256"]
    return out


def _read_edges(path: Path, n: int, nodes: Sequence[Sequence[str]], episodes: Mapping[str, str]) -> list[Edge]:
    """The ``n`` edges of ``edges.jsonl``: ids in line order, valid subgoals between nodes that exist; in a
    graph built from episodes (``episodes`` not empty), subgoals of those episodes only, each from the node
    holding its first screenshot to the node holding its last (``nodes``: their screenshots). A graph of
    no episodes holds edges added one by one (:meth:`MemoryGraph.add_edge`), which belong to none."""
    rows = read_jsonl(path)
    if len(rows) != n:
        raise DataError("edges", f"the manifest counts {n} edges, the file holds {len(rows)}", str(path))
    out = []
    for i, (lineno, e) in enumerate(rows):
        where = f"{path}, line {lineno}"
        if not isinstance(e, dict):
            raise DataError("id", f"expected an edge object, got {type(e).__name__}", where)
        check_number(e.get("id"), "id", lo=i, hi=i, integer=True, path=where)
        for name in ("source", "target"):
            check_number(e.get(name), name, lo=0, hi=len(nodes) - 1, integer=True, path=where)
        if not isinstance(e.get("subgoal"), dict):
            raise DataError("subgoal", f"expected an object, got {e.get('subgoal')!r:.60}", where)
        try:
            sg = check_subgoals([Subgoal.from_dict(e["subgoal"])])[0]
        except DataError as err:
            raise err.at(where, "subgoal") from None
        if episodes and sg.episode_id not in episodes:
            raise DataError("subgoal.episode_id", f"episode {sg.episode_id!r:.80} is not in {EPISODES}", where)
        for name, node, shot in (("source", e["source"], sg.from_screenshot), ("target", e["target"], sg.to_screenshot)):
            if episodes and shot not in nodes[node]:  # ingest puts a subgoal's screens into the nodes its edge joins
                raise DataError(name, f"node {node} does not hold the subgoal's screenshot {shot!r:.80}", where)
        out.append(Edge(i, e["source"], e["target"], sg))
    return out


UNIT_ATOL = 1e-4  # a float32 unit vector's norm is within ~1e-7 of 1; far looser than that, far tighter than any edit


def _check_vectors(folder: Path, g: MemoryGraph) -> None:
    """Refuse node sums that no merge of unit vectors gives (zero, or longer than their count) and
    intent rows that are not unit vectors."""
    with np.errstate(over="ignore"):  # a sum near float64's limit has an infinite norm: refused below
        norms = np.linalg.norm(g.node_sums, axis=1)  # [nodes]
    counts = np.array([g.graph.nodes[i]["count"] for i in range(g.n_nodes)], dtype=np.float64)
    bad = np.flatnonzero((norms <= 0) | (norms > counts * (1 + UNIT_ATOL)) | ((counts == 1) & (abs(norms - 1) > UNIT_ATOL)))
    if len(bad):
        i = int(bad[0])
        raise DataError("node_sums", f"row {i} has norm {norms[i]:.6g}, but is the sum of {int(counts[i])} unit "
                                     f"vector(s) (norm in (0, {int(counts[i])}])", str(folder / NODE_SUMS))
    norms = np.linalg.norm(g.edge_intents.astype(np.float64), axis=1)  # [edges]
    bad = np.flatnonzero(abs(norms - 1) > UNIT_ATOL)
    if len(bad):
        raise DataError("edge_intents", f"row {int(bad[0])} has norm {norms[bad[0]]:.6g}, not a unit vector",
                        str(folder / EDGE_INTENTS))


def _check_episode_hashes(folder: Path, g: MemoryGraph) -> None:
    """Refuse edges whose episodes no longer hash to what ``episodes.json`` records (an edited
    subgoal). An episode whose subgoals were all kept must hash to its record; one that lost some
    to deduplication cannot be rehashed, but each such episode lost one at least, so there can be
    no more of them than duplicates dropped. (A graph of no episodes: edges added one by one, nothing to check.)"""
    if not g.episodes:
        return
    try:
        by_episode = group_by_episode(e.subgoal for e in g.edges)  # two edges of one subgoal: refused
        for group in by_episode.values():
            boundary_screens(group)  # one screenshot per step of an episode
    except DataError as err:
        raise err.at(str(folder / EDGES), "subgoal") from None
    stale = [eid for eid, h in g.episodes.items() if eid not in by_episode or episode_hash(by_episode[eid]) != h]
    if len(stale) > g.duplicates_dropped:
        i = list(g.episodes).index(stale[0])
        raise DataError(f"[{i}].sha256", f"the edges of {len(stale)} episode(s), e.g. {stale[0]!r:.60}, do not hash to "
                                         f"the recorded sha256, and only {g.duplicates_dropped} subgoal(s) were dropped "
                                         "as duplicates (an edge's subgoal was edited?)", str(folder / EPISODES))


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


def draw_node_strips(graph: MemoryGraph, store_root: str | Path, screen_of: Mapping[str, str | None],
                     max_nodes: int = 12, per_node: int = 6, thumb: tuple[int, int] = (54, 120)) -> Any:
    """A figure with one row per node (the most visited first): up to ``per_node`` of its merged
    screenshots side by side, each captioned with its true type; returns the Figure."""
    import matplotlib.pyplot as plt

    nodes = sorted(graph.graph.nodes, key=lambda n: (-len(graph.node_screenshots(n)), n))[:max_nodes]
    fig, axes = plt.subplots(max(1, len(nodes)), per_node, figsize=(per_node * 1.1, max(1, len(nodes)) * 2.1),
                             squeeze=False)
    for row, node in zip(axes, nodes + [None] * (len(axes) - len(nodes))):
        shots = graph.node_screenshots(node) if node is not None else []
        for j, ax in enumerate(row):
            ax.set_axis_off()
            if j < len(shots):
                image = open_image(file_inside(store_root, shots[j], "screenshot")).convert("RGB").resize(thumb)
                ax.imshow(np.asarray(image))
                ax.set_title(screen_of.get(shots[j]) or "?", fontsize=5)
        if node is not None:
            row[0].text(-0.15, 0.5, f"node {node}\n{len(shots)} screens", transform=row[0].transAxes, ha="right",
                        va="center", fontsize=6)
    fig.subplots_adjust(left=0.16, wspace=0.05, hspace=0.35)
    return fig


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
        image = open_image(file_inside(store_root, graph.node_screenshots(n)[0], "screenshot")).resize(thumb)
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
    Every episode is checked before the first is ingested: a DataError leaves the graph as it was.
    """
    _check_embedders(graph.config, image_embedder, text_embedder)
    report = IngestReport()
    todo = []
    for eid, group in group_by_episode(check_subgoals(subgoals)).items():
        if graph.episodes.get(eid) == episode_hash(group):
            report.episodes_skipped += 1
        else:
            todo.append(group)
    shots = [p for group in todo for _, p in boundary_screens(group)]
    screens = embed_screenshots(image_embedder, store_root, shots, progress=progress)
    texts = [s.text for group in todo for s in group]
    intents = text_embedder.embed(texts) if texts else np.zeros((0, graph.config.text_dim), np.float32)
    starts = np.cumsum([0] + [len(group) for group in todo])
    checked = [graph.check_episode(group, screens, intents[a:b]) for group, a, b in zip(todo, starts, starts[1:])]
    for episode in checked:
        graph.ingest(episode, report)
    return report


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

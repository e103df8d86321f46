"""A saved Subgoal-aware Memory Graph read back (:func:`load_graph`), every file checked.

:meth:`guimem.smg.graph.MemoryGraph.save` writes the folder (its layout: :mod:`guimem.smg.graph`).
Reading checks every file against the manifest (counts, shapes, dtypes, finite values, ids, paths)
and the files against each other: each edge of an ingested episode, joining the nodes that hold its
screenshots; episode hashes; node counts and sums a merge of unit vectors gives. A mismatch is a
:class:`~guimem.core.data.DataError` naming the file and the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from guimem.core.data import DataError, Subgoal, group_by_episode
from guimem.core.io import check_number, file_inside, read_json, read_jsonl, read_npy, read_whole, relative_path
from guimem.smg.graph import (
    EDGE_INTENTS,
    EDGES,
    EPISODES,
    FORMAT,
    FORMAT_VERSION,
    GRAPH_FILES,
    MANIFEST,
    NODE_SUMS,
    NODES,
    Edge,
    GraphConfig,
    MemoryGraph,
    boundary_screens,
    check_subgoals,
    episode_hash,
    normalize_rows,
)
from guimem.smg.index import NodeSearch

SHA256 = re.compile(r"^[0-9a-f]{64}$")


def load_graph(path: str | Path, expect: GraphConfig | None = None, search: NodeSearch | None = None) -> MemoryGraph:
    """Read a saved graph, every file checked against the manifest; with ``expect``, refuse one
    made with other embedders or dimensions; ``search``: how the loaded graph searches its nodes
    (the default :class:`~guimem.smg.index.NodeSearch` when None).

    ``tau``/``theta`` come from the manifest (a graph's structure depends on them); a
    caller who wants other thresholds rebuilds.
    """
    def read(folder: Path) -> MemoryGraph:
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
        g = MemoryGraph(config, search)
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
    return read_whole(path, read, "saved memory")


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
        if not isinstance(d.get("sha256"), str) or not SHA256.match(d["sha256"]):
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

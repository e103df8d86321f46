"""Benchmark of the node search at scale: graph build time as screens grow, exact against HNSW, and
retrieval at a million nodes (one core).

Measures, side by side in one run:

* **graph build** (node merging, ``MemoryGraph.add_screen``) for 10k, 100k and 1M synthetic screens:
  64-d unit vectors (the pipeline's PCA dimension), noisy copies of ``screens / 10`` random
  prototype screens (cosine about 0.99 to their prototype), so a memory's nodes grow with its
  screens as they do with a real benchmark's. Exact search (:class:`~guimem.smg.index.NodeIndex`)
  against HNSW (``NodeSearch(kind="hnsw")``), wall and CPU seconds, and whether the two graphs are
  the same node for node. Exact search at 1M screens would take most of an hour here; unless
  ``--exact-max`` allows it, its time there is *estimated*: the CPU time of one exact query against
  the 1M-screen graph's final nodes, times the screens, halved (the nodes grow linearly from none),
  and marked ``estimated``. The growth exponent of each is the slope of log(time) on log(screens).
* **retrieval at 1M nodes**: 1M random unit node vectors in an HNSW index and an exact one, 1000
  queries (noisy copies of stored nodes): latency per query (median, 95th percentile; CPU and
  wall) and recall@1 of HNSW against exact search, at query breadths ``ef_search`` of 100, 200
  and 400 on the one index. Random 64-d vectors are the hard case for HNSW (no low-dimensional
  structure to follow); real screen embeddings cluster.

Writes ``benchmarks/results/index.json``. Run: ``python benchmarks/bench_index.py`` (about 15
minutes on 2 cores; ``--quick`` runs 10k and 100k screens and 100k nodes only).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from guimem.core.io import write_json  # noqa: E402
from guimem.smg.graph import GraphConfig, MemoryGraph, normalize_rows  # noqa: E402
from guimem.smg.index import NodeIndex, NodeSearch  # noqa: E402

DIM = 64
SCREENS = (10_000, 100_000, 1_000_000)
SCREENS_PER_TYPE = 10
QUERIES = 1000
EF_SEARCH = (100, 200, 400)  # HNSW query breadths compared at a million nodes (the default among them)
OUT = Path(__file__).parent / "results" / "index.json"
HNSW = NodeSearch(kind="hnsw")
EXACT = NodeSearch(kind="exact")


def screens(n: int, seed: int = 0) -> np.ndarray:
    """``n`` unit screen vectors around ``n / SCREENS_PER_TYPE`` random prototypes (float32)."""
    rng = np.random.default_rng(seed)
    protos = normalize_rows(rng.normal(size=(max(1, n // SCREENS_PER_TYPE), DIM)))
    noise = rng.normal(size=(n, DIM)).astype(np.float32) * (0.1 / np.sqrt(DIM))
    return normalize_rows(protos[rng.integers(0, len(protos), n)] + noise)


def build(vectors: np.ndarray, search: NodeSearch) -> tuple[MemoryGraph, float, float]:
    """The graph of ``vectors`` merged one by one, and its (wall, cpu) seconds."""
    graph = MemoryGraph(GraphConfig("synthetic", DIM, "none", 1, tau=0.9), search)
    w, c = time.perf_counter(), time.process_time()
    for i, v in enumerate(vectors):
        graph.add_screen(v, f"screens/{i}.png")
    return graph, time.perf_counter() - w, time.process_time() - c


def exact_query_cpu(means: np.ndarray, queries: np.ndarray) -> float:
    """Median CPU seconds of one exact top-1 query over ``means``."""
    index = NodeIndex(DIM)
    index.extend(means)
    times = []
    for q in queries:
        c = time.process_time()
        index.topk(q, 1)
        times.append(time.process_time() - c)
    return float(np.median(times))


def slope(xs: list[float], ys: list[float]) -> float:
    """The least-squares slope of log(y) on log(x)."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def graph_build(sizes: tuple[int, ...], exact_max: int) -> dict:
    rows = []
    for n in sizes:
        vectors = screens(n)
        approx, aw, ac = build(vectors, HNSW)
        row = {"screens": n, "nodes": approx.n_nodes, "hnsw_wall_s": round(aw, 2), "hnsw_cpu_s": round(ac, 2)}
        if n <= exact_max:
            exact, ew, ec = build(vectors, EXACT)
            same = exact.n_nodes == approx.n_nodes and all(
                exact.node_screenshots(i) == approx.node_screenshots(i) for i in range(exact.n_nodes))
            row.update(exact_wall_s=round(ew, 2), exact_cpu_s=round(ec, 2), exact_estimated=False,
                       same_graph=bool(same))
        else:
            per_query = exact_query_cpu(approx.node_means, vectors[:2000])
            row.update(exact_cpu_s=round(per_query * n / 2, 1), exact_wall_s=None, exact_estimated=True,
                       exact_query_cpu_ms_at_final_nodes=round(per_query * 1e3, 3), same_graph=None)
        row["exact_over_hnsw_cpu"] = round(row["exact_cpu_s"] / row["hnsw_cpu_s"], 2)
        rows.append(row)
        print(row, flush=True)
    xs = [r["screens"] for r in rows]
    return {"rows": rows,
            "growth_exponent": {"exact": round(slope(xs, [r["exact_cpu_s"] for r in rows]), 2),
                                "exact_measured_only": round(slope(*zip(*[(r["screens"], r["exact_cpu_s"]) for r in rows
                                                                          if not r["exact_estimated"]])), 2)
                                if sum(not r["exact_estimated"] for r in rows) >= 2 else None,
                                "hnsw": round(slope(xs, [r["hnsw_cpu_s"] for r in rows]), 2)}}


def retrieval(n_nodes: int) -> dict:
    rng = np.random.default_rng(1)
    nodes = normalize_rows(rng.normal(size=(n_nodes, DIM)))
    picked = rng.integers(0, n_nodes, QUERIES)
    queries = normalize_rows(nodes[picked] + rng.normal(size=(QUERIES, DIM)).astype(np.float32) * (0.3 / np.sqrt(DIM)))
    exact = NodeIndex(DIM)
    exact.extend(nodes)
    approx = HNSW.make(DIM)
    w, c = time.perf_counter(), time.process_time()
    approx.extend(nodes)
    built = (time.perf_counter() - w, time.process_time() - c)
    out: dict = {"nodes": n_nodes, "queries": QUERIES, "hnsw_build_wall_s": round(built[0], 1),
                 "hnsw_build_cpu_s": round(built[1], 1)}

    def timed(index) -> tuple[list[int], dict]:
        walls, cpus, top = [], [], []
        for q in queries:
            w, c = time.perf_counter(), time.process_time()
            ids, _ = index.topk(q, 1)
            cpus.append(time.process_time() - c)
            walls.append(time.perf_counter() - w)
            top.append(int(ids[0]))
        return top, {"cpu_median": round(1e3 * float(np.median(cpus)), 3),
                     "cpu_p95": round(1e3 * float(np.percentile(cpus, 95)), 3),
                     "wall_median": round(1e3 * float(np.median(walls)), 3),
                     "wall_p95": round(1e3 * float(np.percentile(walls, 95)), 3)}

    truth, out["exact_ms"] = timed(exact)
    out["hnsw_by_ef_search"] = {}
    for ef in EF_SEARCH:  # one index, queried with a wider and wider candidate list
        approx.search = dataclasses.replace(HNSW, ef_search=ef)
        top, ms = timed(approx)
        out["hnsw_by_ef_search"][str(ef)] = {"recall_at_1": round(float(np.mean(np.array(top) == np.array(truth))), 4),
                                             "ms": ms}
    default = out["hnsw_by_ef_search"][str(HNSW.ef_search)]
    out.update(default_ef_search=HNSW.ef_search, recall_at_1=default["recall_at_1"], hnsw_ms=default["ms"],
               exact_over_hnsw_cpu_median=round(out["exact_ms"]["cpu_median"] / default["ms"]["cpu_median"], 1))
    print(out, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k screens, 100k nodes")
    parser.add_argument("--exact-max", type=int, default=100_000, help="largest build timed with exact search")
    args = parser.parse_args()
    sizes = SCREENS[:2] if args.quick else SCREENS
    result = {"machine": {"platform": platform.platform(), "python": platform.python_version(),
                          "cpus": os.cpu_count()},
              "settings": {"dim": DIM, "screens_per_type": SCREENS_PER_TYPE, "hnsw": HNSW.to_dict(), "tau": 0.9},
              "graph_build": graph_build(sizes, args.exact_max),
              "retrieval": retrieval(100_000 if args.quick else 1_000_000)}
    write_json(OUT, result)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

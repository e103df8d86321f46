"""Benchmark of the memory: embedding, graph building and retrieval (one core).

Measures:

* image embedding throughput, screens/s, on distinct world screens: EfficientNet-Lite0 at
  its default 112x224 input and squashed to 224x224, micro-batches of 1 and 8;
* graph build throughput excluding embedding, subgoals/s: episodes of precomputed unit
  vectors (noisy copies of prototype screens, so nodes merge and edges deduplicate) fed
  to ``MemoryGraph.add_episode``;
* retrieval latency per query at 1k, 10k and 100k nodes (two out-edges per node), for
  1280-d vectors (EfficientNet-Lite0) and 64-d vectors (its PCA projection), beside a
  plain NumPy brute-force top-1 (``argmax(X @ q)``) over the same vectors in the same run.
  ``MemoryGraph.retrieve`` is timed whole: the exact top-k node search and collecting the
  nodes' out-edges. Queries are noisy copies of stored node vectors (a screen like one in
  memory). The latency of an exact scan does not depend on how the vectors are spread.
  The two are timed alternately, query by query, and reported as medians of CPU time (what
  one quiet core would take) and of wall time (what this shared machine took).

Writes ``benchmarks/results/memory.json``. Run: ``python benchmarks/bench_memory.py``
(about two minutes). CPU seconds are reported beside wall seconds because the machine
may be shared; BLAS and torch run on one thread.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import json  # noqa: E402
import platform  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from guimem.core.data import Subgoal  # noqa: E402
from guimem.core.io import write_json  # noqa: E402
from guimem.core.store import open_image  # noqa: E402
from guimem.models.embedding import EfficientNetLite0Embedder  # noqa: E402
from guimem.phone.config import WorldConfig  # noqa: E402
from guimem.phone.demonstrator import generate_dataset  # noqa: E402
from guimem.smg.graph import GraphConfig, MemoryGraph, normalize_rows  # noqa: E402

N_SCREENS = 64  # distinct world screens embedded per setting
NODE_COUNTS = (1_000, 10_000, 100_000)
DIMS = (1280, 64)
OUT = Path(__file__).parent / "results" / "memory.json"


def timed(fn) -> tuple[float, float]:
    """(wall, cpu) seconds of ``fn()``."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def world_screens(n: int) -> list:
    """``n`` distinct screenshots of a small generated world, in a fixed order."""
    with tempfile.TemporaryDirectory() as tmp:
        generate_dataset(WorldConfig(n_train=24, n_test=6), tmp, seed=0, progress=False)
        paths = sorted((Path(tmp) / "train" / "screens").glob("*.png"))[:n]
        return [open_image(p) for p in paths]


def bench_embedding(images: list) -> dict:
    """Screens/s of EfficientNet-Lite0 for each input fit and micro-batch size."""
    out = {}
    for fit in ("tall", "squash"):
        for batch in (1, 8):
            e = EfficientNetLite0Embedder(fit, batch_size=batch)
            e.embed(images[:batch])  # load the weights, warm up
            wall, cpu = timed(lambda: e.embed(images))
            out[f"{e.name}/batch{batch}"] = {"screens_per_s_wall": round(len(images) / wall, 2),
                                             "screens_per_s_cpu": round(len(images) / cpu, 2)}
    return out


def synthetic_episodes(n_episodes: int, dim: int, seed: int):
    """Episodes over 200 prototype screens with 40 recurring intents, as unit vectors."""
    rng = np.random.default_rng(seed)
    protos = rng.standard_normal((200, dim))
    intents = normalize_rows(rng.standard_normal((40, 384)))
    episodes = []
    for e in range(n_episodes):
        length = int(rng.integers(2, 7))
        screens = {f"e{e}/s{i}": normalize_rows(protos[rng.integers(200)] + 0.15 * rng.standard_normal(dim))
                   for i in range(length + 1)}
        subs = [Subgoal(f"e{e}", i, i, i, f"e{e}/s{i}", f"e{e}/s{i + 1}", "t", "", "", "yes" if rng.random() < 0.8
                        else "no", None) for i in range(length)]
        episodes.append((subs, screens, intents[rng.integers(40, size=length)]))
    return episodes


def bench_build(dim: int, n_episodes: int = 1500) -> dict:
    """Subgoals/s of ``add_episode`` on precomputed vectors (embedding excluded)."""
    episodes = synthetic_episodes(n_episodes, dim, seed=1)
    g = MemoryGraph(GraphConfig("bench", dim, "bench-text", 384, tau=0.9, theta=0.9))
    wall, cpu = timed(lambda: [g.add_episode(s, v, i) for s, v, i in episodes])
    n = sum(len(s) for s, _, _ in episodes)
    return {"subgoals": n, "subgoals_per_s_wall": round(n / wall, 1), "subgoals_per_s_cpu": round(n / cpu, 1),
            "nodes": g.n_nodes, "edges": g.n_edges, "dedup_ratio": round(g.stats()["dedup_ratio"], 3)}


def graph_with_nodes(vectors: np.ndarray, rng: np.random.Generator) -> MemoryGraph:
    """A graph holding ``vectors`` as nodes, each with two out-edges to random nodes."""
    n, dim = vectors.shape
    g = MemoryGraph(GraphConfig("bench", dim, "bench-text", 8, tau=0.9, theta=0.9))
    g.index.extend(vectors)
    g.graph.add_nodes_from((i, {"count": 1, "screenshots": [f"s{i}"]}) for i in range(n))
    intent = np.eye(8, dtype=np.float32)
    for i in range(n):
        for j, target in enumerate(rng.integers(n, size=2)):
            g.add_edge(i, int(target), Subgoal(f"e{i}", j, 0, 0, "a", "b", "t", "", "", "yes", None), intent[j])
    return g


def paired_ms(ours, floor, queries: np.ndarray, budget_s: float = 4.0) -> dict[str, float]:
    """Median wall and CPU milliseconds per query of ``ours(q)`` and ``floor(q)``, timed alternately.

    Alternating the two on every query exposes both to the same load on a shared machine.
    """
    ours(queries[0]), floor(queries[0])
    times: dict[str, list[float]] = {"ours_wall": [], "ours_cpu": [], "floor_wall": [], "floor_cpu": []}
    start = time.perf_counter()
    for q in queries:
        for name, fn in (("ours", ours), ("floor", floor)):
            w, c = time.perf_counter(), time.process_time()
            fn(q)
            times[f"{name}_cpu"].append(time.process_time() - c)
            times[f"{name}_wall"].append(time.perf_counter() - w)
        if len(times["ours_wall"]) >= 7 and time.perf_counter() - start > budget_s:
            break
    return {k: float(np.median(v) * 1000) for k, v in times.items()} | {"queries": len(times["ours_wall"])}


def bench_retrieval(dim: int) -> dict:
    """Per-query ms of ``MemoryGraph.retrieve`` and of NumPy brute force, at each node count."""
    rng = np.random.default_rng(dim)
    out = {}
    for n in NODE_COUNTS:
        vectors = normalize_rows(rng.standard_normal((n, dim)))  # [n, dim] float32
        g = graph_with_nodes(vectors, rng)
        picks = vectors[rng.integers(n, size=200)].astype(np.float64)
        queries = normalize_rows(picks + 0.3 / np.sqrt(dim) * rng.standard_normal(picks.shape))  # cosine ~0.95
        x = g.index.vectors

        def brute(q):
            return int(np.argmax(x @ q))

        assert all(g.retrieve(q, 1)[0].node == brute(q) for q in queries[:20])
        t = paired_ms(lambda q: g.retrieve(q, k=1), brute, queries)
        out[str(n)] = {"retrieve_ms_cpu": round(t["ours_cpu"], 3), "numpy_bruteforce_ms_cpu": round(t["floor_cpu"], 3),
                       "ratio_cpu": round(t["ours_cpu"] / t["floor_cpu"], 3),
                       "retrieve_ms_wall": round(t["ours_wall"], 3),
                       "numpy_bruteforce_ms_wall": round(t["floor_wall"], 3),
                       "ratio_wall": round(t["ours_wall"] / t["floor_wall"], 3),
                       "queries": t["queries"], "matrix_mb": round(x.nbytes / 2**20, 1)}
        del g, vectors, x
    return out


def main() -> dict:
    torch.set_num_threads(1)
    images = world_screens(N_SCREENS)
    result = {
        "embedding": {"screens": len(images), "screen_size": list(images[0].size), **bench_embedding(images)},
        "build_excluding_embedding": {str(d): bench_build(d) for d in DIMS},
        "retrieval_k1": {str(d): bench_retrieval(d) for d in DIMS},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, one thread; load average "
                   f"{os.getloadavg()[0]:.1f} at the end",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    write_json(OUT, result, indent=2, sort_keys=False)
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))

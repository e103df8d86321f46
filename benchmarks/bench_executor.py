"""Benchmark of the executors (:mod:`guimem.core.executor`): the same embedding job in this process,
in local worker processes and on a local Ray, side by side in one run.

The job is a stage's heaviest per-step loop: EfficientNet-Lite0 embedding ``--screens`` distinct
world screenshots (``data/world/train/screens``, written by ``dvc repro``) in chunks of 64, no cache,
one torch thread per worker. Measured:

* wall seconds of the job in this process, with 2 local processes, and on Ray with 1 and 2 actors
  (Ray started beforehand: its start-up is reported on its own, as a stage pays it once), each Ray
  job twice: the first call starts the actors (each loads the model), a later call finds them up;
* Ray's overhead against this process on one worker (the same work, one core): ``ray_1 / in_process - 1``,
  for the first call and for a later one;
* Ray's cost per task: empty chunks through one actor (per chunk, and for a call of one chunk,
  which starts and stops the actor), against the same in this process;
* whether every executor gave the in-process vectors exactly.

Writes ``benchmarks/results/executor.json``. Run: ``python benchmarks/bench_executor.py`` (about
three minutes on 2 cores).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from guimem.core.executor import ExecutorSpec, LocalExecutor, RayExecutor, run_all  # noqa: E402
from guimem.core.io import write_json  # noqa: E402
from guimem.models.embedding import CachedImageEmbedder, make_image_embedder  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "results" / "executor.json"


class Nothing:
    """An empty task: what remains is the executor's own cost per chunk."""

    def setup(self) -> None:
        return None

    def run(self, _: None, chunk: int) -> int:
        return chunk


def job(files: list[Path], executor) -> tuple[np.ndarray, float]:
    embedder = CachedImageEmbedder(make_image_embedder("efficientnet_lite0", 8), None, executor=executor)
    start = time.perf_counter()
    vectors = embedder.embed_files(files)
    return vectors, time.perf_counter() - start


def per_task_ms(executor, n: int = 500) -> dict[str, float]:
    """Milliseconds per empty chunk within one map call of ``n``, and of a map call of one chunk
    (which, on Ray, starts and stops its actor: what each call of a stage's loop pays once)."""
    start = time.perf_counter()
    run_all(executor, Nothing(), list(range(n)))
    per_chunk = (time.perf_counter() - start) / n
    start = time.perf_counter()
    run_all(executor, Nothing(), [0])
    return {"per_chunk": round(1e3 * per_chunk, 3), "one_call": round(1e3 * (time.perf_counter() - start), 1)}


def main() -> None:
    import ray

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--screens", type=int, default=1536)
    args = parser.parse_args()
    torch.set_num_threads(1)
    files = sorted((ROOT / "data" / "world" / "train" / "screens").glob("*.png"))[: args.screens]
    if len(files) < args.screens:
        raise SystemExit(f"need {args.screens} screenshots in data/world/train/screens (run dvc repro first)")
    here, t_here = job(files, LocalExecutor(1))
    procs, t_procs = job(files, LocalExecutor(2))
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray_start = time.perf_counter() - start
    on_ray = {}
    for workers in (1, 2):
        executor = RayExecutor(ExecutorSpec("ray", workers=workers))
        cold, t_cold = job(files, executor)  # the actors start and load the model
        warm, t_warm = job(files, executor)  # the same actors, model loaded: a stage's later calls
        executor.close()
        on_ray[workers] = {"first_call_wall_s": round(t_cold, 2), "later_call_wall_s": round(t_warm, 2),
                           "screens_per_s": round(len(files) / t_warm, 1),
                           "same_vectors": bool(np.array_equal(cold, here) and np.array_equal(warm, here))}
    empty = RayExecutor(ExecutorSpec("ray", workers=1))
    ray_task = per_task_ms(empty)
    empty.close()
    ray.shutdown()
    result = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": 1},
        "screens": len(files), "chunk": 64,
        "in_process": {"wall_s": round(t_here, 2), "screens_per_s": round(len(files) / t_here, 1)},
        "local_2_processes": {"wall_s": round(t_procs, 2), "screens_per_s": round(len(files) / t_procs, 1),
                              "same_vectors": bool(np.array_equal(procs, here))},
        "ray_start_s": round(ray_start, 1),
        "ray": {str(k): v for k, v in on_ray.items()},
        "ray_1_overhead_vs_in_process": {"first_call": round(on_ray[1]["first_call_wall_s"] / t_here - 1, 3),
                                         "later_call": round(on_ray[1]["later_call_wall_s"] / t_here - 1, 3)},
        "ray_2_speedup_vs_in_process": round(t_here / on_ray[2]["later_call_wall_s"], 2),
        "local_2_speedup_vs_in_process": round(t_here / t_procs, 2),
        "empty_chunk_ms": {"ray_1": ray_task, "in_process": per_task_ms(LocalExecutor(1))},
    }
    write_json(OUT, result)
    print(result)


if __name__ == "__main__":
    main()

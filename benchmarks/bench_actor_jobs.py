"""Benchmark of the actor's per-step work on the executors: 06's step records
(:mod:`guimem.routing.jobs`) and 05's closed-loop plays (:mod:`guimem.eval.jobs`), in this process,
on local worker processes and on a local Ray, side by side in one run.

* **Step records**: the frozen miniature actor (``data/actor/model``) on the first ``--steps``
  held-out SMG steps (``data/retrieval_eval``), every condition, 8 sampled actions per rendering,
  batches of 64, chunks of 4 batches (as 06 runs them).
* **Closed loop**: ``--tasks`` held-out tasks (one world seed) played with each of the five
  memories (none, Flat, Action-Graph, Task-Graph, SMG; memory as text), one play per memory (as 05
  plays them); each worker loads the actor, the memories and their embedders.

Each job runs in this process, on 2 local processes, and on Ray with 1 and 2 actors (Ray started
beforehand; its start-up reported on its own). A Ray job runs twice on the same actors: the first
call starts them (each loads its models), the later one finds them up. Reported: wall seconds, Ray's
overhead against this process on one worker (``ray_1 / in_process - 1``), the speed-ups, and whether
every executor gave the in-process records and traces exactly. One torch thread per worker.

Writes ``benchmarks/results/actor_jobs.json``. Run after ``dvc repro``:
``python benchmarks/bench_actor_jobs.py`` (about five minutes on 2 cores).
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

from guimem.actors.loading import ActorSpec  # noqa: E402
from guimem.core.executor import ExecutorSpec, LocalExecutor, RayExecutor  # noqa: E402
from guimem.core.io import write_json  # noqa: E402
from guimem.core.store import load_episodes  # noqa: E402
from guimem.eval.action_match import MatchConfig  # noqa: E402
from guimem.eval.closed_loop import pick_tasks, replay_tasks, replay_world_config  # noqa: E402
from guimem.eval.jobs import PlayEpisodes, condition_plays, play_all  # noqa: E402
from guimem.routing.jobs import record_steps  # noqa: E402
from guimem.routing.records import SampledPreference  # noqa: E402
from guimem.train.examples import examples_from_retrieval  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "results" / "actor_jobs.json"
MEMORIES = ("none", "flat", "action_graph", "task_graph", "smg")


def same_records(a, b) -> bool:
    arrays = [(a.hidden[c], b.hidden[c]) for c in a.hidden] + [(a.candidates[c], b.candidates[c]) for c in a.candidates]
    arrays += [(a.hits[r][c], b.hits[r][c]) for r in a.hits for c in a.hits[r]]
    arrays += [(a.sampled[r][c], b.sampled[r][c]) for r in a.sampled for c in a.sampled[r]]
    return a.rows == b.rows and all(np.array_equal(x, y) for x, y in arrays)


def timed(run):
    start = time.perf_counter()
    out = run()
    return out, time.perf_counter() - start


def compare(name: str, run, same, ray) -> dict:
    """``run(executor)`` in this process (twice: the second is timed, models loaded), on 2 local
    processes and on Ray with 1 and 2 actors (first and later call)."""
    run(LocalExecutor(1))  # this process loads its models once (as a stage has by then)
    here, t_here = timed(lambda: run(LocalExecutor(1)))
    procs, t_procs = timed(lambda: run(LocalExecutor(2)))
    on_ray = {}
    for workers in (1, 2):
        executor = RayExecutor(ExecutorSpec("ray", workers=workers))
        cold, t_cold = timed(lambda: run(executor))
        warm, t_warm = timed(lambda: run(executor))
        executor.close()
        on_ray[str(workers)] = {"first_call_wall_s": round(t_cold, 2), "later_call_wall_s": round(t_warm, 2),
                                "same_results": bool(same(cold, here) and same(warm, here))}
    print(name, t_here, t_procs, on_ray)
    return {"in_process_wall_s": round(t_here, 2),
            "local_2_processes": {"wall_s": round(t_procs, 2), "same_results": bool(same(procs, here))},
            "ray": on_ray,
            "ray_1_overhead_vs_in_process": {"first_call": round(on_ray["1"]["first_call_wall_s"] / t_here - 1, 3),
                                             "later_call": round(on_ray["1"]["later_call_wall_s"] / t_here - 1, 3)},
            "local_2_speedup_vs_in_process": round(t_here / t_procs, 2),
            "ray_2_speedup_vs_in_process": round(t_here / on_ray["2"]["later_call_wall_s"], 2)}


def main() -> None:
    import ray

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=768)
    parser.add_argument("--tasks", type=int, default=12)
    args = parser.parse_args()
    torch.set_num_threads(1)
    actor = ActorSpec("mini", str(ROOT / "data" / "actor" / "model"), batch_size=64, torch_threads=1)
    test_root = ROOT / "data" / "world" / "test"
    if not (ROOT / "data" / "actor" / "model").is_dir():
        raise SystemExit("run dvc repro first: the benchmark plays the pipeline's actor and memories")
    test = load_episodes(test_root, verify_images=False)
    steps = examples_from_retrieval(test, test_root, ROOT / "data" / "retrieval_eval", ["smg"], 4)[: args.steps]
    rules = {"aitw": MatchConfig("aitw"), "learngui": MatchConfig("learngui", screen_size_px=steps[0].input.screenshot.size)}
    records = lambda executor: record_steps(actor, steps, rules, SampledPreference(), 0, executor, progress=False)

    replays = replay_tasks(pick_tasks(test, args.tasks, 0), 1)
    task = PlayEpisodes(actor, replay_world_config(test_root, 20), str(ROOT / "data" / "graph_build"), MEMORIES[1:],
                        str(ROOT / "data" / "world" / "memory"), cache_dir=str(ROOT / ".cache" / "guimem" / "embeddings"))
    plays = [p for m in MEMORIES for p in condition_plays(m, None if m == "none" else m, "none" if m == "none" else "text",
                                                          replays)]
    play = lambda executor: play_all(task, plays, executor, progress=False)[0]
    same_traces = lambda a, b: [t.to_dict() for t in a] == [t.to_dict() for t in b]

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray_start = time.perf_counter() - start
    result = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": 1},
        "ray_start_s": round(ray_start, 1),
        "records": {"steps": len(steps), "chunk_steps": 256, **compare("records", records, same_records, ray)},
        "closed_loop": {"plays": len(plays), "episodes": len(plays) * len(replays),
                        **compare("closed loop", play, same_traces, ray)},
    }
    ray.shutdown()
    write_json(OUT, result)
    print(result)


if __name__ == "__main__":
    main()

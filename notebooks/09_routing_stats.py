# %% [markdown]
# # 09 · Routing statistics: how SwitchMem switches along a trajectory, offline and in closed loop
#
# **What this stage does.** Two things with the routers of `07_probe_router`, carried over as they
# are — weights and τ, no retuning:
#
# 1. **Routing behaviour (paper Table 2)** along trajectories: the share of trajectories that use
#    both modalities, the share of steps routed to Image, the mean number of switches per trajectory
#    and the mean run length (steps between switches) — on the held-out demonstrations (offline: the
#    router's choice at every demonstrated step) and on the actor's own closed-loop episodes;
# 2. **the closed loop** (the MobileMiniWoB++ analogue): the frozen actor plays the held-out tasks of
#    `05_closed_loop` — same tasks, same three world seeds, same step budget — with the Subgoal-Graph
#    memory shown as nothing, text, image, both, or routed by SwitchMem step by step. Success rate
#    per world seed, and each condition paired with SwitchMem over task × seed.
#
# The no-memory and text runs are the ones `05_closed_loop` already played (its traces, checked to be
# the same tasks and seeds); image, both and SwitchMem are played here. On recorded runs
# (`base.episodes: recorded`) there is no environment to play in: the offline table is computed on
# the recorded test trajectories, and the closed loop is skipped, said so in the outputs.
#
# **Reads** `data/world/` (`data/recorded/` with `base.episodes: recorded`), `data/graph_build/`, the
# actor's folder (`pretrained/actor/`, or a Hugging Face checkpoint's), `data/closed_loop/traces.jsonl`,
# `data/layer_analysis/held_out/` and `data/probe_router/`. **Writes** the SwitchMem traces (each step
# with the modality it was shown) to `data/routing_stats/traces.jsonl`, headline numbers to
# `metrics/routing_stats.json`, every table to `results/routing_stats.json`, and
# `figures/routing_stats_{table,closed_loop}.png`.
#
# **Running it yourself.** `dvc repro` runs it; in JupyterLab it reads the pipeline's `data/` and
# writes under `scratch/` (about 2 minutes on 2 cores).
#
# **Paper.** SwitchMem Table 2 (dual-modality trajectories %, image-routed steps %, switches per
# trajectory, mean run length: AITW 83.8 / 36.5 / 1.72 / 2.42; LearnGUI 90.8 / 81.3 / 1.79 / 4.95;
# MobileMiniWoB++ 57.8 / 76.3 / 1.56 / 4.50) and Table 1's MobileMiniWoB++ column (task success:
# none 58.70, text 53.26, image 57.61, both 60.87, SwitchMem 63.04).

# %% tags=["parameters"]
world_dir = "data/world"  # episode stores from 00_world (test/ is replayed) or 00_recorded (no closed loop)
memories_dir = "data/graph_build"  # memories from 02_graph_build
actor = {}  # the frozen actor, as 05_closed_loop's (ActorSpec in guimem.actors.loading; the pipeline passes closed_loop.actor's fields)
closed_loop_dir = "data/closed_loop"  # 05_closed_loop's traces: its no-memory and text runs are reused
records_dir = "data/layer_analysis"  # held-out step records from 06_layer_analysis
routers_dir = "data/probe_router"  # routers from 07_probe_router
out_dir = "scratch/routing_stats"  # the SwitchMem traces (the pipeline: data/routing_stats)
memory = "smg"  # the memory whose retrieval is routed in closed loop (must have a router)
offline_memories = ["smg", "task_graph"]  # memories whose offline routing behaviour is reported
seed = 0  # the task sample (as 05_closed_loop's)
n_seeds = 3  # world seeds per task (as 05_closed_loop's)
max_tasks = 48  # held-out tasks replayed (as 05_closed_loop's)
max_steps = 20  # step budget per episode (as 05_closed_loop's)
history_len = 4  # earlier actions of the episode the actor sees (the pipeline: pretrain.model.max_history, the frozen miniature's own)
k = 0  # anchors retrieved per query (0: the memory's own default; as 05_closed_loop's)
batch_size = 0  # episodes played in lock-step (0: all at once)
executor = {}  # where the three conditions are played (ExecutorSpec in guimem.core.executor: kind local or ray, address, workers, gpus_per_worker; traces do not depend on it)
image_embedder = "efficientnet_lite0"  # must be the embedder the memories were built with
text_embedder = "minilm"  # must be the intent embedder the memories were built with
cache_dir = ".cache/guimem/embeddings"  # content-hash embedding cache (not tracked)
chunks_dir = ".cache/guimem/chunks"  # finished chunks of actor work, by content key: a stopped run resumes from them ("": keep none; not tracked)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
metrics_path = "scratch/metrics/routing_stats.json"  # headline numbers (the pipeline: metrics/routing_stats.json)
results_path = "scratch/results/routing_stats.json"  # every number behind them

# %%
from pathlib import Path

import torch

from guimem.actors.loading import ActorSpec, check_reads_recorded, describe_actor
from guimem.core.executor import ExecutorSpec, make_executor
from guimem.core.resume import ChunkCache
from guimem.core.store import load_episodes
from guimem.eval.closed_loop import (NO_ENVIRONMENT, paired_success, pick_tasks, replay_tasks, replay_world,
                                     save_traces, success_table)
from guimem.eval.jobs import PlayEpisodes, condition_plays, play_all
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.routing.figures import closed_loop_figure, labelled_table_figure
from guimem.routing.jobs import SwitchMemRouting
from guimem.routing.records import StepRecords
from guimem.routing.route_scores import route_records, routing_statistics
from guimem.routing.router import Router
from guimem.routing.trajectories import condition_traces, reused_traces, routed_trajectories
from guimem.viz.plotting import MEMORY_LABELS, figure_path, notice_figure, save_figure

# %%
enter_repo_root()
torch.manual_seed(seed)
actor_spec, run_as = ActorSpec(**actor), ExecutorSpec(**executor)
torch.set_num_threads(actor_spec.torch_threads)
routers = {kind: Router.load(Path(routers_dir) / kind) for kind in sorted({memory, *offline_memories})}

# %% [markdown]
# ## Offline: the router along the held-out demonstrations
#
# At every step of every held-out demonstration the router chooses from the memory-free state and
# the two candidates; a trajectory's choices in step order give its switches and runs. (This needs
# every step recorded, `06_layer_analysis`'s default; with a sample of steps, runs would join across
# the steps left out.) In closed loop every step shows memory, so each trace is one unbroken sequence.

# %%
held_all = StepRecords.load(Path(records_dir) / "held_out")
offline = {}
for kind in offline_memories:
    offline[kind] = routing_statistics(routed_trajectories(routers[kind], held_all.of_memory(kind), records_dir))
    print(f"{MEMORY_LABELS[kind]} (held-out demonstrations): {offline[kind]}")

# %% [markdown]
# ## Closed loop: SwitchMem against fixed renderings
#
# The same held-out tasks and world seeds as `05_closed_loop`, the same actor, memory and budget.
# SwitchMem's reader retrieves once and renders both ways; the router picks one per step and the
# actor is run on that prompt only. Each step of its traces records the modality shown. The three
# conditions are played by the executor the `executor` group describes, as in `05_closed_loop` (the
# same traces wherever they run).

# %%
test_root = Path(world_dir) / "test"
world_config = replay_world(test_root, max_steps)  # None: recorded runs, with no environment to play them in
closed_loop = world_config is not None
if closed_loop:
    tasks = pick_tasks(load_episodes(test_root, verify_images=False), max_tasks, seed)
    replays = replay_tasks(tasks, n_seeds)
    in_process = run_as.kind == "local" and run_as.workers == 1  # else only the workers load the actor (a GPU each)
    model = actor_spec.actor_model
    print("actor:", describe_actor(actor_spec.load(), model) if in_process else f"{model} (loaded by each worker)")
else:
    check_reads_recorded(actor_spec, str(test_root))
    print(NO_ENVIRONMENT)

# %%
if closed_loop:
    task = PlayEpisodes(actor_spec, world_config, memories_dir, (memory,), str(Path(world_dir) / "memory"),
                        image_embedder, text_embedder, cache_dir, SwitchMemRouting(routers_dir), k=k or None,
                        history_len=history_len)
    reused = reused_traces(Path(closed_loop_dir) / "traces.jsonl", memory, replays)  # none and text: 05's plays
    plays = [p for name, modality, routed in (("image", "image", False), ("both", "both", False),
                                              ("switchmem", "both", True))
             for p in condition_plays(name, memory, modality, replays, batch_size, routed)]
    resumed = ChunkCache(chunks_dir) if chunks_dir else None
    traces_played, _ = play_all(task, plays, make_executor(run_as), resumed)
    if resumed is not None:
        resumed.tell_hits(f"of {len(plays)} plays")  # on the terminal: the report does not depend on it

# %%
conditions = ["none", "text", "image", "both", "switchmem"]
played = ({name: [t for t in traces_played if t.memory == name] for name in ("image", "both", "switchmem")}
          if closed_loop else {"switchmem": []})  # none played on recorded runs: no traces
save_traces(Path(out_dir) / "traces.jsonl", played["switchmem"])
if closed_loop:
    traces = condition_traces(reused, played)  # named by condition
    table = success_table(traces)
    paired = {c: paired_success(traces, "switchmem", c) for c in conditions if c != "switchmem"}
    for c in conditions:
        print(f"{c:>9}: SR {table[c]['mean']:5.1f} ± {table[c]['std']:4.1f}  per seed {table[c]['per_seed']}")
    for c, p in paired.items():
        print(f"SwitchMem vs {c}: completes {p['fixed']} episodes it does not, fails {p['broken']} it completes "
              f"(p = {p['p_value']:.4f})")

# %% [markdown]
# ## Routing behaviour in closed loop (paper Table 2)

# %%
online = routing_statistics([[s.shown == "image" for s in t.steps if s.shown in ("text", "image")]
                             for t in played["switchmem"]]) if closed_loop else None
cells = lambda v: [f"{v['dual_modality_pct']:.1f}", f"{v['image_steps_pct']:.1f}",
                   f"{v['switches_per_trajectory']:.2f}", f"{v['mean_run_length']:.2f}"]
rows = [[f"{MEMORY_LABELS[kind]}, demonstrations (offline)", *cells(v)] for kind, v in offline.items()]
if closed_loop:
    rows.append([f"{MEMORY_LABELS[memory]}, closed loop", *cells(online)])
rows += [["paper: AITW", "83.8", "36.5", "1.72", "2.42"], ["paper: LearnGUI", "90.8", "81.3", "1.79", "4.95"],
         ["paper: MobileMiniWoB++", "57.8", "76.3", "1.56", "4.50"]]
columns = ["trajectories", "dual-modality %", "image-routed steps %", "switches / traj.", "mean run length"]
fig = labelled_table_figure(columns, rows, "SwitchMem's routing along trajectories")
save_figure(fig, figure_path(figures_dir, "routing_stats", "table"))

# %% [markdown]
# SwitchMem against the fixed renderings in closed loop, per world seed:

# %%
if closed_loop:
    fig2 = closed_loop_figure(table, conditions, f"Closed loop, {len(tasks)} held-out tasks x {n_seeds} world seeds, "
                                                f"{MEMORY_LABELS[memory]} memory")
else:  # the figure's file says why there is none
    fig2 = notice_figure("SwitchMem in closed loop", f"No closed loop: {NO_ENVIRONMENT}.")
save_figure(fig2, figure_path(figures_dir, "routing_stats", "closed_loop"))
print("closed loop:", online if closed_loop else f"skipped: {NO_ENVIRONMENT}")

# %%
results = {"offline": offline, "memory": memory, "tau": routers[memory].tau}
metrics = {
    "offline_image_steps_pct": round(offline[memory]["image_steps_pct"], 4) if memory in offline else None,
    "offline_switches_per_trajectory": round(offline[memory]["switches_per_trajectory"], 4) if memory in offline else None,
}
if closed_loop:
    results |= {
        "closed_loop_routing": online, "tasks": len(tasks), "seeds": n_seeds,
        "success_rate": {c: {"mean": round(table[c]["mean"], 4), "std": round(table[c]["std"], 4),
                             "per_seed": [round(v, 4) for v in table[c]["per_seed"]]} for c in conditions},
        "switchmem_paired_vs": paired}
    metrics = {**{f"success_rate_{c}": round(table[c]["mean"], 4) for c in conditions},
               "closed_loop_image_steps_pct": round(online["image_steps_pct"], 4),
               "closed_loop_dual_modality_pct": round(online["dual_modality_pct"], 4),
               **metrics, "switchmem_vs_text_p": paired["text"]["p_value"]}
else:
    results["closed_loop"] = f"skipped: {NO_ENVIRONMENT}"
report(results_path, results, metrics_path, metrics)

# %% [markdown]
# # 03 · Retrieval evaluation: does each memory bring back what is needed next?
#
# **What this stage does.** It replays the held-out test trajectories step by step and, at
# every step, asks each memory built in `02_graph_build` for experience about the current
# screen and goal. Before any actor is involved, it measures whether the retrieved items are
# *relevant*: does one of them do what the demonstrator did next from this screen?
#
# **Why.** Closed-loop success (`05_closed_loop`) mixes two questions: does the memory find
# the right experience, and can the actor use it. This stage answers the first one alone,
# and writes what each memory retrieved at each test step for the actor stage to read.
#
# **Reads** `data/world/{memory,test}/`, `data/segmentation/memory.jsonl` (for the τ sweep) and
# `data/graph_build/` (the four memories and the screen projection). **Writes**
# `data/retrieval_eval/<memory>/steps.jsonl` (per test step: shown and retrieved item ids,
# the text block, the image path, whether the right experience is among the shown items) with
# `images/` (the rendered memory images, one per distinct retrieval) — what the actor stage
# reads, and nothing that depends on the evaluation's knobs (`ks`, `tau_sweep`), so changing
# those reruns only this stage. Its headline numbers go to `metrics/retrieval_eval.json`, every
# score behind them to `results/retrieval_eval.json`, the τ sweep to
# `plots/retrieval_eval_tau_sweep.csv`, and the figures to `figures/retrieval_eval_{hits,tau}.png`.
#
# **Running it yourself.** `dvc repro` runs this notebook with the paths above. Opened in
# JupyterLab (`make lab`), it reads the pipeline's `data/` and its defaults below write under
# `scratch/`, so trying a parameter here never touches the pipeline's outputs. Saving the
# notebook keeps only your edits to its cells (`git checkout notebooks/03_retrieval_eval.py`
# undoes them).
#
# **Paper.** The SMG paper's retrieval design (top-k = 1 node, all its out-edges, successes
# and failures) against its baselines; the measures here (hit@k, failure share, memory-block
# size) are this companion's diagnostics.

# %% tags=["parameters"]
world_dir = "data/world"  # episode stores from 00_world (memory/ types the items, test/ is replayed)
subgoals_dir = "data/segmentation"  # subgoals from 01_segmentation (memory.jsonl, for the τ sweep)
memories_dir = "data/graph_build"  # the memories and projection/ from 02_graph_build
out_dir = "scratch/retrieval_eval"  # per-memory retrieved memory of every test step (the pipeline: data/retrieval_eval)
image_embedder = "efficientnet_lite0"  # must be the embedder the memories were built with
text_embedder = "minilm"  # must be the intent embedder the memories were built with
ks = [1, 3, 5]  # hit@k: the true next subgoal type among the first k retrieved items
k_nodes = 0  # anchors per query (nodes or Flat subgoals); 0: each memory's own default
tau_sweep = [0.85, 0.9, 0.93, 0.95]  # SMG merge thresholds compared (rebuilt from cached embeddings)
max_test_episodes = 0  # size knob: replay only the first N test episodes (0: all)
cache_dir = ".cache/guimem/embeddings"  # content-hash embedding cache (not tracked)
embed_workers = 2  # processes embedding new screens (one torch thread each: same vectors whatever the count)
executor = "local"  # where new screens are embedded: local (embed_workers processes), ray (a local Ray, embed_workers actors) or ray:<address> (a cluster)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
plots_dir = "scratch/plots"  # the data behind the τ sweep, CSV (the pipeline: plots, read by dvc.yaml's plots)
metrics_path = "scratch/metrics/retrieval_eval.json"  # headline numbers (the pipeline: metrics/retrieval_eval.json)
results_path = "scratch/results/retrieval_eval.json"  # every score behind them (the pipeline: results/retrieval_eval.json)

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from guimem.core.executor import ExecutorSpec, make_executor
from guimem.core.store import load_episodes, load_subgoals
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.smg.memories import MEMORIES, build_memory, load_memory, memory_embedders
from guimem.smg.retrieval import by_true_type, embed_queries, evaluate_memory, step_queries, summarize, write_results
from guimem.viz.plotting import MEMORY_COLORS, MEMORY_LABELS, figure_path, save_figure, write_plot_data

enter_repo_root()
torch.set_num_threads(1)  # EfficientNet's float sums depend on the thread count: one thread, everywhere
memory_root, test_root = Path(world_dir) / "memory", Path(world_dir) / "test"
past = {e.id: e for e in load_episodes(memory_root, verify_images=False)}  # validated by 02_graph_build
test = load_episodes(test_root)
test = test[:max_test_episodes] if max_test_episodes else test
queries = step_queries(test)
scored_ks = sorted({1, *ks})  # hit@1 is always scored: the headline number, whatever ks asks for
print(f"{len(test)} test episodes, {len(queries)} steps to query; {len(past)} memory episodes")

# %% [markdown]
# ## Queries
# Each test step is a query: its screenshot (embedded exactly as the memories' screens were,
# including the PCA projection fitted in `02_graph_build`) and its episode's goal. What the
# demonstrator did next — the step's ground-truth subgoal type — is used only to score.

# %%
images, texts = memory_embedders(memories_dir, image_embedder, text_embedder, cache_dir,
                                 executor=make_executor(ExecutorSpec.parse(executor, embed_workers)))
vectors = embed_queries(images, test_root, queries, progress=True)
memories = {name: load_memory(Path(memories_dir) / name, images, texts, store_root=memory_root) for name in MEMORIES}
print(f"screen embedder {images.name}; {len(vectors)} distinct test screenshots")

# %% [markdown]
# ## Hit rates, failures and block size
# **hit@k**: the step's true subgoal type is among the ground-truth types of the first k
# retrieved items (an item's types are those of the past steps it covers; a Task-Graph item
# covers a whole trajectory, so its hit@k is lenient). **hit@shown**: among the items the
# actor is shown. **failure share**: shown items the judge labelled as failed. **other phone**:
# shown items experienced on another phone (app variant) than the test step's — 0 when the
# memory is the evaluation phone's own experience, as in the papers' setting. **tokens**:
# the text block's length in the actor's tokens.

# %%
results, summaries = {}, {}
for name in MEMORIES:
    results[name] = evaluate_memory(memories[name], queries, vectors, past, ks=scored_ks, k=k_nodes or None, progress=True)
    summaries[name] = summarize(results[name])
    write_results(out_dir, memories[name], results[name], memory_root, progress=True)
columns = [f"hit@{k}" for k in scored_ks] + ["hit@shown", "failure_share_shown", "other_phone_share_shown",
                                              "items_retrieved", "tokens_mean"]
print(f"{'memory':14s}" + "".join(f"{c:>24s}" for c in columns))
for name in MEMORIES:
    print(f"{MEMORY_LABELS[name]:14s}" + "".join(f"{summaries[name][c]:24.3f}" for c in columns))

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4), gridspec_kw={"width_ratios": [2, 1]})
bars = [f"hit@{k}" for k in scored_ks] + ["hit@shown"]
width = 0.8 / len(MEMORIES)
for i, name in enumerate(MEMORIES):
    x = np.arange(len(bars)) + (i - (len(MEMORIES) - 1) / 2) * width
    a.bar(x, [summaries[name][c] for c in bars], width, color=MEMORY_COLORS[name], label=MEMORY_LABELS[name])
a.set_xticks(np.arange(len(bars)), bars)
a.set(ylabel="share of test steps", ylim=(0, 1), title="Is the next subgoal among the retrieved items?")
a.legend(fontsize=7, ncols=2)
b.bar([MEMORY_LABELS[n] for n in MEMORIES], [summaries[n]["tokens_mean"] for n in MEMORIES],
      color=[MEMORY_COLORS[n] for n in MEMORIES])
b.set(ylabel="tokens (mean)", title="Memory block size")
b.tick_params(axis="x", labelrotation=30, labelsize=7)
save_figure(fig, figure_path(figures_dir, "retrieval_eval", "hits"))

# %% [markdown]
# Where does each memory help? hit@1 by the true subgoal type of the step (a type a memory
# never retrieves correctly is one its unit cannot express, or whose screens it merges away).

# %%
per_type = {name: by_true_type(results[name], 1) for name in MEMORIES}
print(f"{'true type':24s}{'steps':>6s}" + "".join(f"{MEMORY_LABELS[n]:>15s}" for n in MEMORIES))
for t, (n, _) in per_type["smg"].items():
    print(f"{t:24s}{n:6d}" + "".join(f"{per_type[m][t][1]:15.2f}" for m in MEMORIES))

# %% [markdown]
# ## τ: how much merging retrieval wants
# The SMG is rebuilt from cached embeddings at each τ (θ, k and the rest as built). Too low
# a τ merges different screens, so a node's edges mix unrelated experience; too high a τ
# stops experience from different trajectories meeting at one node.

# %%
smg = memories["smg"]
built = [past[e] for e in smg.graph.episodes]  # the episodes the SMG holds, in ingest order
memory_subgoals = [s for s in load_subgoals(Path(subgoals_dir) / "memory.jsonl", store_root=memory_root) if s.episode_id in smg.graph.episodes]
tau_rows = []
for t in tau_sweep:
    m = build_memory("smg", built, memory_subgoals, memory_root, images, texts, **{**smg.get_params(), "tau": t})
    s = summarize(evaluate_memory(m, queries, vectors, past, ks=scored_ks, k=k_nodes or None))
    tau_rows.append({"tau": t, "nodes": m.graph.n_nodes, **{c: s[c] for c in bars + ["tokens_mean"]}})
fig, ax = plt.subplots(figsize=(5, 3.2))
for c, style in zip(bars, ["o-", "s-", "^-", "d--"]):
    ax.plot([r["tau"] for r in tau_rows], [r[c] for r in tau_rows], style, label=c)
ax.set(xlabel="τ (merge threshold)", ylabel="share of test steps", ylim=(0, 1), title="Subgoal-Graph retrieval vs τ")
ax.legend(fontsize=7)
save_figure(fig, figure_path(figures_dir, "retrieval_eval", "tau"))
write_plot_data(plots_dir, "retrieval_eval", "tau_sweep", [{k: round(v, 4) for k, v in r.items()} for r in tau_rows])
for r in tau_rows:
    print({k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()})

# %% [markdown]
# ## Metrics
# The headline numbers (`make metrics`; a few of them in `metrics/headline.json`, `dvc metrics show`): each memory's hit@1 and
# hit@shown; every score behind them, per-type hit rates and the τ sweep go to
# `results/retrieval_eval.json`.

# %%
results = {"test_episodes": len(test), "steps": len(queries), "image_embedder": images.name,
           "memories": {n: {k: round(v, 4) for k, v in summaries[n].items()} for n in MEMORIES},
           "hit_by_true_type": {n: {t: {"steps": c, "hit@1": round(h, 4)} for t, (c, h) in per_type[n].items()}
                                for n in MEMORIES},
           "tau_sweep": [{k: round(v, 4) for k, v in r.items()} for r in tau_rows]}
metrics = {"steps": len(queries)} | {f"{n}_{c}": results["memories"][n][c] for n in MEMORIES for c in ("hit@1", "hit@shown")}
report(results_path, results, metrics_path, metrics)

# %% [markdown]
# # 02 · Graph build: the Subgoal-aware Memory Graph and the baseline memories
#
# **What this stage does.** It turns the memory trajectories — past experience on the
# evaluation variants of the apps, of other tasks than the test's — cut into subgoals by
# `01_segmentation`, into four memories an agent can consult: the **Subgoal-aware Memory
# Graph** (SMG) and three baselines — **Subgoal-Flat** (the same subgoals, no merging, no
# graph), **Action-Graph** (the same graph, but every single step is an edge) and
# **Task-Graph** (the same graph, but every whole trajectory is an edge).
#
# **Why.** A subgoal ("open the Display settings") is the unit of experience that transfers:
# it recurs across tasks and apps, while whole trajectories are too specific and single
# steps too myopic. The SMG merges screens that look alike into nodes, so experience from
# many trajectories meets at the screen where it is needed, and drops near-duplicate edges,
# so the memory stays small.
#
# **Reads** `data/world/memory/` (episodes and screenshots) and `data/segmentation/memory.jsonl`
# (subgoals). **Writes** `data/graph_build/{smg,flat,action_graph,task_graph}/` (plain files:
# JSON, `.npy`; no pickle), `data/graph_build/projection/` (the fitted PCA of screen
# embeddings), its headline numbers to `metrics/graph_build.json`, every count behind them to
# `results/graph_build.json`, the τ and θ sweeps to `plots/graph_build_{tau,theta}_sweep.csv`,
# and `figures/graph_build_{sweeps,graph,memory}.png`.
#
# **Running it yourself.** `dvc repro` runs this notebook with the paths above. Opened in
# JupyterLab (`make lab`), it reads the pipeline's `data/` and its defaults below write under
# `scratch/`, so trying a parameter here never touches the pipeline's outputs. Saving the
# notebook keeps only your edits to its cells (`git checkout notebooks/02_graph_build.py`
# undoes them).
#
# **Paper.** The SMG construction (nodes merged at cosine ≥ τ = 0.9 with running-mean
# embeddings; subgoal edges deduplicated per source node at equal target and success and
# intent cosine ≥ θ = 0.9) and the baselines of its main table.

# %% tags=["parameters"]
world_dir = "data/world"  # episode stores from 00_world (memory/ is read)
subgoals_dir = "data/segmentation"  # subgoals from 01_segmentation (memory.jsonl is read)
out_dir = "scratch/graph_build"  # one folder per memory, plus projection/ (the pipeline: data/graph_build)
image_embedder = "efficientnet_lite0"  # screen embedder: efficientnet_lite0[-squash|-pad], pixels, hf:<local path>
text_embedder = "minilm"  # intent embedder: minilm (all-MiniLM-L6-v2) or hashing
pca_dim = 64  # project screen embeddings onto their top principal directions (0: keep every dimension)
graph = {}  # the graph memories' thresholds, GraphConfig's tau (node merge) and theta (edge dedup); unset: its defaults
retrieval = {}  # what each memory retrieves per query: fields of RetrievalConfig (guimem.smg.retrieval_config)
max_items = 3  # items the actor is shown, as text and as image
max_actions = 4  # actions shown per item
memory_image_width = 180  # memory image width in pixels: the top-1 item's screen at the live screen's size ...
memory_image_height = 405  # ... (180 x 360) over a strip of 4 crops of the shown items' touched elements (45 px each)
node_index = "auto"  # node search: exact, hnsw (approximate, hnswlib) or auto (exact below exact_below nodes, then hnsw)
exact_below = 20000  # auto: nodes searched exactly before HNSW takes over (the default run stays far below)
tau_sweep = [0.8, 0.85, 0.9, 0.93, 0.95, 0.97]  # merge thresholds compared (SMG, theta fixed)
theta_sweep = [0.7, 0.8, 0.9, 0.95, 1.0]  # dedup thresholds compared (SMG, tau fixed)
max_memory_episodes = 0  # size knob: use only the first N memory episodes (0: all)
batch_size = 8  # screens per embedding micro-batch
embed_workers = 2  # processes embedding new screens (one torch thread each: same vectors whatever the count)
executor = "local"  # where new screens are embedded: local (embed_workers processes), ray (a local Ray, embed_workers actors) or ray:<address> (a cluster)
cache_dir = ".cache/guimem/embeddings"  # content-hash embedding cache (not tracked)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
plots_dir = "scratch/plots"  # the data behind the sweeps, CSV (the pipeline: plots, read by dvc.yaml's plots)
metrics_path = "scratch/metrics/graph_build.json"  # headline numbers (the pipeline: metrics/graph_build.json)
results_path = "scratch/results/graph_build.json"  # every count behind them (the pipeline: results/graph_build.json)

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from guimem.core.executor import ExecutorSpec, make_executor
from guimem.core.store import load_episodes, load_subgoals
from guimem.models.embedding import cached_image_embedder, cached_text_embedder, embed_screenshots, fit_projection
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.smg.figures import draw_graph
from guimem.smg.graph import build_graph, node_purity
from guimem.smg.index import NodeSearch
from guimem.smg.memories import GRAPH_MEMORIES, MEMORIES, RenderStyle, build_memory
from guimem.smg.retrieval_config import RetrievalConfig
from guimem.viz.plotting import MEMORY_COLORS, MEMORY_LABELS, figure_path, save_figure, write_plot_data

# %%
enter_repo_root()
torch.set_num_threads(1)  # EfficientNet's float sums depend on the thread count: one thread, everywhere
memory_root = Path(world_dir) / "memory"
episodes = load_episodes(memory_root)  # validates every episode and screenshot
episodes = episodes[:max_memory_episodes] if max_memory_episodes else episodes
keep = {e.id for e in episodes}
subgoals = [s for s in load_subgoals(Path(subgoals_dir) / "memory.jsonl", store_root=memory_root) if s.episode_id in keep]
screen_of = {o.screenshot: o.screen for e in episodes for o in e.observations}  # true screen types: analysis only
print(f"{len(episodes)} memory episodes, {len(subgoals)} subgoals, {len(screen_of)} distinct screenshots")

# %% [markdown]
# ## Embedding screens
# Every distinct memory screenshot goes through the image embedder once (cached by the
# hash of its bytes under `.cache/`, so changing τ later re-embeds nothing). EfficientNet-Lite0
# sees the phone screen at 112 × 224 pixels (its aspect ratio kept) and returns a 1280-d
# pooled feature. Those features are then projected onto their top `pca_dim` principal
# directions, fitted on these same memory screens: most of the variation between screens
# lives there, and a similarity scan over 100k 64-d nodes fits in a CPU's cache where one
# over 1280-d nodes does not (see `benchmarks/results/memory.json`).

# %%
raw_images = cached_image_embedder(image_embedder, cache_dir, batch_size=batch_size,
                                   executor=make_executor(ExecutorSpec.parse(executor, embed_workers)))
texts = cached_text_embedder(text_embedder, cache_dir)
raw = embed_screenshots(raw_images, memory_root, sorted(screen_of), progress=True)
images = raw_images
if pca_dim:
    images = fit_projection(raw_images, [raw[s] for s in sorted(raw)], pca_dim)
    images.save(Path(out_dir) / "projection")
print(f"screen embedder: {images.name} ({images.dim}-d); intent embedder: {texts.name} ({texts.dim}-d)")

# %% [markdown]
# ## The four memories
# Each is built from the same episodes and subgoals and saved as plain files. The graph
# memories share one engine (`guimem.smg.graph`); only the unit on an edge differs: a
# subgoal, a single step, or a whole trajectory. SMG and Action-Graph answer a screen with
# the out-edges of its nearest node; Task-Graph scores every stored trajectory by how much
# its first screen and its goal resemble the current ones (a mid-task screen resembles no
# first screen); Flat returns the subgoals whose first screen is most similar.

# %%
style = RenderStyle(max_items=max_items, max_actions=max_actions,
                    image_size=(memory_image_width, memory_image_height))
search = NodeSearch(kind=node_index, exact_below=exact_below)
recall = RetrievalConfig(**retrieval)  # graph_build.retrieval's fields over RetrievalConfig's defaults
memories = {}
for name in MEMORIES:  # the graph's thresholds go to the graph memories (Flat leaves them aside)
    memories[name] = build_memory(name, episodes, subgoals, memory_root, images, texts, style=style, search=search,
                                  **graph, **recall.settings(name))
    memories[name].save(Path(out_dir) / name)
smg = memories["smg"].graph
counts = {name: (m.graph.stats() if name != "flat" else {"items": len(m.items)}) for name, m in memories.items()}
for name, c in counts.items():
    print(f"{MEMORY_LABELS[name]:14s}", c)

# %% [markdown]
# **Node purity** asks whether merging put together screens that really are the same: for
# each node, the share of its screenshots whose true screen type (kept by the world for
# analysis; no method reads it) is the node's majority type. The **dedup ratio** is the
# share of subgoals dropped as near-duplicates of an earlier edge.

# %%
purity = {name: node_purity(memories[name].graph, screen_of) for name in GRAPH_MEMORIES}
print({k: round(v, 3) for k, v in purity.items()})
print(f"SMG: {smg.n_nodes} nodes from {smg.stats()['screens_merged']} screens, {smg.n_edges} edges, "
      f"dedup ratio {smg.stats()['dedup_ratio']:.3f}, true screen types {len(set(screen_of.values()))}")

# %% [markdown]
# ## How τ and θ shape the graph
# A higher τ merges less: more nodes, each purer. A higher θ drops fewer edges as
# duplicates. The sweep rebuilds the SMG from cached embeddings at each value.

# %%
tau_rows = []
for t in tau_sweep:
    g = build_graph(subgoals, images, texts, memory_root, tau=t, theta=smg.config.theta, search=search)
    tau_rows.append({"tau": t, "nodes": g.n_nodes, "edges": g.n_edges, "purity": node_purity(g, screen_of)})
theta_rows = []
for th in theta_sweep:
    g = build_graph(subgoals, images, texts, memory_root, tau=smg.config.tau, theta=th, search=search)
    theta_rows.append({"theta": th, "edges": g.n_edges, "dedup_ratio": g.stats()["dedup_ratio"]})
fig, (a, b, c) = plt.subplots(1, 3, figsize=(10.5, 3.2), layout="constrained")
a.plot([r["tau"] for r in tau_rows], [r["purity"] for r in tau_rows], "o-", color=MEMORY_COLORS["smg"])
a.set(xlabel="τ (merge threshold)", ylabel="node purity", ylim=(0, 1), title="Purer nodes as τ rises ...")
b.plot([r["tau"] for r in tau_rows], [r["nodes"] for r in tau_rows], "s-", color=MEMORY_COLORS["smg"])
b.axhline(len(set(screen_of.values())), color="#999999", ls="--", lw=1, label="true screen types")
b.set(xlabel="τ (merge threshold)", ylabel="nodes", ylim=(0, None), title="... and more of them")
b.legend(fontsize=7)
c.plot([r["theta"] for r in theta_rows], [r["dedup_ratio"] for r in theta_rows], "o-", color=MEMORY_COLORS["smg"])
c.set(xlabel="θ (dedup threshold)", ylabel="share of subgoals dropped", ylim=(0, 1), title=f"Dedup at τ = {smg.config.tau}")
save_figure(fig, figure_path(figures_dir, "graph_build", "sweeps"))
write_plot_data(plots_dir, "graph_build", "tau_sweep", [{k: round(v, 4) for k, v in r.items()} for r in tau_rows])
write_plot_data(plots_dir, "graph_build", "theta_sweep", [{k: round(v, 4) for k, v in r.items()} for r in theta_rows])

# %% [markdown]
# ## A look at the graph
# The most visited node (usually the launcher) and its nearest neighbours, each drawn with
# the first screenshot that merged into it (the number: node id and how many screens
# merged). Edges are subgoals: green when the judge said they succeeded, vermillion when
# they failed (kept on purpose: a failure is worth remembering), grey when unsure.

# %%
fig, ax = plt.subplots(figsize=(8, 6))
drawn = draw_graph(smg, memory_root, ax, max_nodes=12)
ax.set_title(f"Around the SMG's most visited node: {len(drawn)} of its {smg.n_nodes} nodes")
save_figure(fig, figure_path(figures_dir, "graph_build", "graph"))

# %% [markdown]
# ## What the actor will read
# For a screen, the SMG returns the outgoing edges of its most similar node. The same
# retrieval is rendered twice, the same items (the first `max_items`) each way: as a text block
# for the prompt, and as an image — the top item's anchor screen with its actions marked (ring:
# tap, arrow: swipe, label: typed text or a key; border: green success, vermillion failure,
# yellow unsure) over a strip of crops of what the shown items touched, each framed in its
# item's outcome colour. The node shown is the one
# with the most out-edges; its screenshots show what merging by pixels alone does when
# purity is low: list screens of different apps can share one node, and the goal ranking
# has to bring the relevant edges first.

# %%
busiest = max(smg.graph.nodes, key=lambda n: (smg.graph.out_degree(n), -n))
goal = smg.out_edges(busiest)[0].subgoal.goal  # a task that once passed through this node
retrieved = memories["smg"].retrieve(smg.node_means[busiest], goal)
text = memories["smg"].render_text(retrieved)
print(text)
fig, (a, b) = plt.subplots(1, 2, figsize=(8, 4.5), gridspec_kw={"width_ratios": [1, 1.6]})
a.imshow(memories["smg"].render_image(retrieved))
a.set_axis_off()
b.text(0, 1, text.replace(" | ", "\n   "), va="top", fontsize=6.5, wrap=True)
b.set_axis_off()
fig.suptitle(f"Node {busiest}: {len(retrieved.items)} edges, ranked for the goal {goal!r}", fontsize=9)
save_figure(fig, figure_path(figures_dir, "graph_build", "memory"))

# %% [markdown]
# ## Metrics
# The headline numbers (`make metrics`; a few of them in `metrics/headline.json`, `dvc metrics show`): each memory's size, and the SMG's
# dedup ratio and node purity; every count behind them, and the sweeps, go to
# `results/graph_build.json`.

# %%
results = {
    "episodes": len(episodes), "subgoals": len(subgoals), "screenshots": len(screen_of),
    "screen_types": len(set(screen_of.values())), "image_embedder": images.name, "image_dim": images.dim,
    "text_embedder": texts.name,
    "smg": {**smg.stats(), "purity": round(purity["smg"], 4)},
    "action_graph": {**memories["action_graph"].graph.stats(), "purity": round(purity["action_graph"], 4)},
    "task_graph": {**memories["task_graph"].graph.stats(), "purity": round(purity["task_graph"], 4)},
    "flat": {"items": len(memories["flat"].items)},
    "tau_sweep": [{k: round(v, 4) for k, v in r.items()} for r in tau_rows],
    "theta_sweep": [{k: round(v, 4) for k, v in r.items()} for r in theta_rows],
}
for name in GRAPH_MEMORIES:
    results[name]["dedup_ratio"] = round(results[name]["dedup_ratio"], 4)

# %%
metrics = {"screen_types": results["screen_types"], "smg_nodes": results["smg"]["nodes"],
           "smg_edges": results["smg"]["edges"], "smg_dedup_ratio": results["smg"]["dedup_ratio"],
           "smg_purity": results["smg"]["purity"], "action_graph_edges": results["action_graph"]["edges"],
           "task_graph_edges": results["task_graph"]["edges"], "flat_items": results["flat"]["items"]}
report(results_path, results, metrics_path, metrics)

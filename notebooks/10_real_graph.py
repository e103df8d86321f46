# %% [markdown]
# # 10 · The memory graph on real screens: recorded agent runs, read without a UI tree
#
# **What this stage does.** It takes recordings of a real agent on a real Android app — by default
# the three runs on Simple Calendar Pro bundled in `samples/android_world_simple_calendar/`
# (Apache-2.0; see its NOTICE), as `00_recorded` imported them, their screens given **text
# elements read by OCR** (the recordings have no accessibility tree) — through the same path as
# the built-in world's experience: it **cuts** every run into subgoals with the rule segmenter
# and **builds the Subgoal-aware Memory Graph** from all of them. Then it looks at what the graph
# made of real screens: each node as a strip of the screenshots merged into it, node purity
# against screen types assigned by hand (`screen_labels.json` beside the sample), how the nodes
# move as the merge threshold τ moves, and which screen types were split or merged; and how the
# segmenter's subgoal boundaries agree with subgoals cut by hand (`subgoal_labels.json`), with and
# without OCR.
#
# **Why.** Everything before this stage runs on a synthetic phone that hands the agent its UI
# tree. Real recordings do not: a screenshot and an action on a 0..999 grid is all there is. This
# stage shows which parts of the method carry over as they are (merging screens by their image
# embedding) and which lean on the tree (naming screens, saying what a tap touched).
#
# **Reads** the import of `00_recorded` (`data/recorded/imported/`: every run, its screens'
# types and its subgoals where labelled). **Writes** the graph under `data/real_graph/`, headline numbers to
# `metrics/real_graph.json`, every table to `results/real_graph.json`, the τ sweep to
# `plots/real_graph_tau_sweep.csv`, and `figures/real_graph_{ocr,nodes,tau_sweep}.png`.
#
# **Running it yourself.** `dvc repro` runs it; in JupyterLab it writes under `scratch/` (half a
# minute on 2 cores). Point `recorded.source` at your own runs (and `recorded.source_format` at
# their importer: `agent_run`, `aitw`, `learngui`, `jsonl`, or `store` for an episode store
# recorded from a phone) and `dvc repro real_graph` shows your app's graph.

# %% tags=["parameters"]
recorded_dir = "data/recorded"  # 00_recorded's output: the import (imported/) is read
image_embedder = "efficientnet_lite0"  # screen embedder (as 02_graph_build's)
text_embedder = "minilm"  # intent embedder
pca_dim = 0  # project screen embeddings onto this many principal directions (0: keep all; at most the screens)
graph = {}  # the graph's thresholds, GraphConfig's tau (node merge) and theta (edge dedup); unset: its defaults
tau_sweep = [0.8, 0.85, 0.9, 0.93, 0.95, 0.97]  # merge thresholds compared
out_dir = "scratch/real_graph"  # the graph (smg/) (the pipeline: data/real_graph)
cache_dir = ".cache/guimem/embeddings"  # content-hash embedding cache (not tracked)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
plots_dir = "scratch/plots"  # the data behind the τ sweep (the pipeline: plots)
metrics_path = "scratch/metrics/real_graph.json"  # headline numbers (the pipeline: metrics/real_graph.json)
results_path = "scratch/results/real_graph.json"  # every number behind them

# %%
import dataclasses
from collections import Counter
from pathlib import Path

import matplotlib.pyplot as plt

from guimem.core.data import group_by_episode
from guimem.core.store import load_episodes, load_screenshot, read_manifest
from guimem.models.embedding import cached_image_embedder, cached_text_embedder, embed_screenshots, fit_projection
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.real.importers.common import map_observations
from guimem.real.ocr import draw_lines
from guimem.smg.figures import draw_node_strips
from guimem.smg.graph import build_graph, node_purity, splits_and_merges
from guimem.smg.screens import screen_contexts
from guimem.smg.segment import make_segmenter, segment_episodes
from guimem.smg.segmentation_scores import corpus_boundary_scores
from guimem.smg.segmenters import GroundTruthSegmenter
from guimem.viz.plotting import figure_path, save_figure, write_plot_data

# %%
enter_repo_root()
store = Path(recorded_dir) / "imported"
episodes = load_episodes(store)
ocr = read_manifest(store)["meta"].get("ocr") is not None  # whether 00_recorded read the screens' text
screen_of = {o.screenshot: o.screen for e in episodes for o in e.recorded_observations}
labels = all(t is not None for t in screen_of.values())  # every screen has a type assigned by hand
print(f"{len(episodes)} episodes, {sum(len(e.steps) for e in episodes)} steps, {len(screen_of)} distinct screens"
      + (f", {len(set(screen_of.values()))} screen types" if labels else ", not all of them typed (no purity)"))
for e in episodes:
    print(f"  {e.id}: {len(e.steps)} steps, goal {e.goal!r} ({e.provenance.get('goal_source', 'recorded')}), success {e.success}, "
          f"final screen {e.provenance.get('final_screen', 'recorded')}")

# %% [markdown]
# ## Screens without a UI tree
#
# What the importer did to make a recording an episode is in each episode's provenance: the goal
# taken from the folder name (the recordings store none), and no final screen where the recording
# stops after a tap (its outcome unknown). The screens have no accessibility tree, so OCR
# (`guimem.real.ocr`: PP-OCR, models inside the `rapidocr-onnxruntime` wheel) reads their text
# lines, each becoming a `text` element; the status bar's clock and icons are dropped, since they
# change between two screenshots of one screen. A screen's name is then its top bar's text, as for
# a UI tree.

# %%
first = episodes[0].steps[min(2, len(episodes[0].steps) - 1)].observation
fig, axes = plt.subplots(1, 2, figsize=(6, 6))
draw_lines(load_screenshot(store, first.screenshot), first.elements, axes[0])
axes[0].set_title(f"{len(first.elements)} OCR lines", fontsize=8)
screen_names = Counter(c.name for e in episodes for c in screen_contexts(e.recorded_observations))
top = screen_names.most_common(10)
axes[1].barh([n[:28] for n, _ in top][::-1], [c for _, c in top][::-1])
axes[1].set_title("screen names read from the top bar", fontsize=8)
fig.tight_layout()
save_figure(fig, figure_path(figures_dir, "real_graph", "ocr"))
print("screen names:", dict(screen_names.most_common()))

# %% [markdown]
# ## Subgoals
#
# The rule segmenter cuts each run where the screen's name changes, a window opens or closes, or
# the agent starts acting on a new thing; each subgoal gets an intent, an effect and a behaviour in
# words. Where a tap hit no OCR'd text (an icon), its intent can only name the screen region.

# %%
subgoals = segment_episodes(episodes, make_segmenter("rule"), progress=False)
by_region = sum(" at " in s.text and s.text.startswith(("tap", "long press")) for s in subgoals)
for s in subgoals[:12]:
    print(f"{s.episode_id[:24]:24s} steps {s.first_step}-{s.last_step}: {s.text} | {s.effect} | {s.success}")
print(f"... {len(subgoals)} subgoals; {by_region} intents name only a screen region")

# %% [markdown]
# **Against subgoals cut by hand.** A boundary is a step where a new subgoal starts; precision
# is the share of the segmenter's boundaries a person also drew, recall the share of a person's it
# found (exactly, and within one step). The same runs are segmented once more with their screens'
# elements removed — what the segmenter sees without OCR — to show what reading the text buys.

# %%
boundary = {}
if all(s.subgoal is not None for e in episodes for s in e.steps):  # every step labelled by hand
    truth = {e.id: GroundTruthSegmenter().spans(e) for e in episodes}
    blind_screens = [map_observations(e, lambda obs, _: dataclasses.replace(obs, elements=())) for e in episodes]
    segmentations = {"as imported" + (" (OCR)" if ocr else ""): subgoals,
                     "without elements": segment_episodes(blind_screens, make_segmenter("rule"), progress=False)}
    for name, parts in segmentations.items():
        boundary[name] = {f"tolerance {t}": corpus_boundary_scores(group_by_episode(parts), truth, t).to_dict()
                          for t in (0, 1)}
        print(f"{name}: " + ", ".join(f"{k}: P {v['precision']:.2f} R {v['recall']:.2f} F1 {v['f1']:.2f}"
                                      for k, v in boundary[name].items()))

# %% [markdown]
# ## The graph, node by node
#
# Every subgoal's first and last screens are embedded (EfficientNet-Lite0, as in `02_graph_build`)
# and merged into a node when their cosine with the node reaches τ. Each row below is one node:
# the screenshots merged into it, each captioned with the type assigned by hand. A pure node holds
# one type; a type in several rows was split.

# %%
images = cached_image_embedder(image_embedder, cache_dir)
texts = cached_text_embedder(text_embedder, cache_dir)
vectors = embed_screenshots(images, store, sorted(screen_of), progress=False)
if pca_dim:
    images = fit_projection(images, [vectors[s] for s in sorted(vectors)], pca_dim)
smg = build_graph(subgoals, images, texts, store, **graph)
smg.save(Path(out_dir) / "smg")
purity = node_purity(smg, screen_of) if labels else None  # None: not measured (no screen types by hand)
fig = draw_node_strips(smg, store, screen_of)
save_figure(fig, figure_path(figures_dir, "real_graph", "nodes"))
print(f"τ = {smg.config.tau}: {smg.n_nodes} nodes, {smg.n_edges} edges, purity "
      + (f"{purity:.3f}" if labels else "not measured (no screen labels)"))

# %% [markdown]
# ## τ, and what splits and what merges

# %%
rows = []
for t in tau_sweep:
    g = build_graph(subgoals, images, texts, store, tau=t, theta=smg.config.theta)
    rows.append({"tau": t, "nodes": g.n_nodes, "edges": g.n_edges,
                 "purity": round(node_purity(g, screen_of), 4) if labels else None})
write_plot_data(plots_dir, "real_graph", "tau_sweep", rows)

# %%
fig, ax = plt.subplots(figsize=(4.5, 3))
ax.plot([r["tau"] for r in rows], [r["nodes"] for r in rows], "o-", label="nodes")
if labels:
    ax.axhline(len(set(screen_of.values())), color="#999999", ls="--", lw=1, label="screen types")
    ax2 = ax.twinx()
    ax2.plot([r["tau"] for r in rows], [r["purity"] for r in rows], "s-", color="#d62728", label="purity")
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("node purity")
ax.set_xlabel("merge threshold τ")
ax.set_ylabel("nodes")
ax.legend(loc="upper left", fontsize=7)
save_figure(fig, figure_path(figures_dir, "real_graph", "tau_sweep"))

# %%
found = splits_and_merges(smg, screen_of) if labels else None  # needs a type for every screen
split = {t: n for t, n in found["splits"].items() if len(n) > 1} if labels else None
merged = {n: c for n, c in found["merges"].items() if len(c) > 1} if labels else None
print("τ sweep:", rows)
print("types split over several nodes:", (split or "none") if labels else "not measured (no screen labels)")
print("nodes holding several types:", (merged or "none") if labels else "not measured (no screen labels)")

# %%
report(results_path, {
    "episodes": [{"id": e.id, "steps": len(e.steps), **dict(e.provenance)} for e in episodes],
    "screen_names": dict(screen_names), "subgoals": [s.to_dict() for s in subgoals], "tau_sweep": rows,
    "boundaries": boundary,
    "splits": found["splits"] if labels else None,
    "merges": {str(n): c for n, c in found["merges"].items()} if labels else None}, metrics_path, {
    "episodes": len(episodes), "steps": sum(len(e.steps) for e in episodes), "screens": len(screen_of),
    "screen_types": len(set(screen_of.values())) if labels else None, "subgoals": len(subgoals),
    "intents_by_region_only": by_region, "nodes": smg.n_nodes, "edges": smg.n_edges,
    "purity": round(purity, 4) if labels else None,  # null, as every number not measured (no screen labels)
    "types_split": len(split) if labels else None, "nodes_merging_types": len(merged) if labels else None,
    "boundary_f1": round(next(iter(boundary.values()))["tolerance 0"]["f1"], 4) if boundary else None,
})

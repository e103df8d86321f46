# %% [markdown]
# # 06 · Layer analysis: does the frozen actor's hidden state know which rendering of its memory it prefers?
#
# **What this stage does.** For every held-out step, and for every step of a *probe pool* the
# later stages learn from, it runs the frozen actor of `04_actor` four times — no memory, the
# retrieved demonstration as text, the same demonstration as an image, both — and keeps, per step:
# whether each answer matches the demonstrated action (under the AITW and the LearnGUI step rules),
# a **sampled action preference** (8 actions drawn from the actor under text and under image,
# scored by the step rule: image's share right minus text's), and the **hidden state of every
# layer at the final prompt token** for the memory-free, the text and the image prompt. Then it
# asks the two questions of SwitchMem's analysis: how often, and which way, do the renderings
# disagree (paper Fig. 2)? And can a linear probe read the preference from the signed shift
# `h_I − h_T`, more so in deeper layers?
#
# **Why.** SwitchMem routes each step's memory to text or image from the actor's own hidden
# states. That only makes sense if (1) neither rendering wins everywhere, and (2) the actor's
# internal state carries which one it will act better with. This stage measures both, before
# `07_probe_router` builds the router on them.
#
# **Reads** `data/world/{test,memory}/` (`data/recorded/...` with `base.episodes: recorded`),
# `data/segmentation/memory.jsonl`, `data/graph_build/`, `data/retrieval_eval/` and the actor's
# folder (`pretrained/actor/`, or a Hugging Face checkpoint's). **Writes** the step records (the
# on-disk format of `guimem.routing.records`: `hidden_<condition>.npy` `[steps, layers + 1, d]`,
# `candidate_<modality>.npy`, `steps.jsonl`, `manifest.json`) to `data/layer_analysis/{held_out,pool}/`,
# its headline numbers to `metrics/layer_analysis.json`, every table behind them to
# `results/layer_analysis.json`, the layer curve to `plots/layer_analysis_layers.csv`, and
# `figures/layer_analysis_{modality_wins,layers}.png`.
#
# **Running it yourself.** `dvc repro` runs it with the paths above. Opened in JupyterLab it reads
# the pipeline's `data/` and writes under `scratch/` (about a minute on 2 cores).
#
# **Paper.** SwitchMem's layer analysis and Fig. 2 (there Qwen3.5-9B on AITW, LearnGUI and
# MobileMiniWoB++; here the 6-layer miniature on held-out app variants). The same stage runs a
# Hugging Face VLM (`guimem.actors.hf.policy.HFVLMActor`, hidden states in the same layout) with one
# parameter: `dvc exp run -S closed_loop.actor.actor_model=<checkpoint folder>` (05–09 all play that actor).
#
# **On recorded runs** (`base.episodes: recorded`, the paper's own setting: AITW, LearnGUI or your
# agent's recordings imported by `00_recorded`) the held-out steps are the recorded test split's,
# the gold is the recorded action (scored by both step rules), the memories are built from the
# memory split, and the probe pool is the memory split reading memories rebuilt without its fold.
# It needs a Hugging Face VLM as the actor: the miniature knows only the world's phones.

# %% tags=["parameters"]
world_dir = "data/world"  # episode stores (00_world's, or 00_recorded's data/recorded): test/ (held-out steps) and memory/ (the probe pool)
subgoals_dir = "data/segmentation"  # subgoals of the memory episodes (memory.jsonl), to rebuild memories per fold
memories_dir = "data/graph_build"  # the memories from 02_graph_build (their settings are copied per fold)
retrieval_dir = "data/retrieval_eval"  # what each memory retrieved at every held-out step
actor = {}  # the frozen actor 05_closed_loop plays (ActorSpec in guimem.actors.loading; the pipeline passes closed_loop.actor's fields)
history_len = 4  # earlier actions of the episode the actor sees (the pipeline: pretrain.model.max_history, the frozen miniature's own)
out_dir = "scratch/layer_analysis"  # step records go to <out_dir>/{held_out,pool} (the pipeline: data/layer_analysis)
image_embedder = "efficientnet_lite0"  # must be the embedder the memories were built with
text_embedder = "minilm"  # must be the intent embedder the memories were built with
seed = 0  # folds of the pool, sampling, cross-validation and bootstrap
memories = ["smg", "task_graph"]  # whose top-1 retrieval is rendered both ways (the paper routes a flat top-1 demonstration)
k_folds = 4  # the pool's memory episodes read memories rebuilt without their own fold of tasks
preference = {}  # the sampled preference (SampledPreference in guimem.routing.records: n_samples actions drawn per step and rendering at temperature, scored by the step rule rule: aitw or learngui; both are recorded)
probe = {}  # the probe: standardise -> PCA to pca_dim dimensions -> logistic regression with inverse L2 strength c (ProbeConfig in guimem.routing.probe)
curve = {}  # the layer curves: folds (cross-validation by episode) and n_boot (episode-bootstrap resamples; CurveConfig in guimem.routing.probe)
max_pool_episodes = 0  # size knob: the first N memory episodes only (0: all)
max_eval_steps = 0  # size knob: a fixed random sample of held-out steps (0: all)
executor = {}  # where the actor runs (ExecutorSpec in guimem.core.executor: kind local or ray, address, workers, gpus_per_worker; records do not depend on it)
cache_dir = ".cache/guimem/embeddings"  # content-hash embedding cache (not tracked)
chunks_dir = ".cache/guimem/chunks"  # finished chunks of actor work, by content key: a stopped run resumes from them ("": keep none; not tracked)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
plots_dir = "scratch/plots"  # the data behind the layer curve (the pipeline: plots)
metrics_path = "scratch/metrics/layer_analysis.json"  # headline numbers (the pipeline: metrics/layer_analysis.json)
results_path = "scratch/results/layer_analysis.json"  # every number behind them

# %%
from pathlib import Path

import torch

from guimem.actors.loading import ActorSpec, check_reads_recorded, describe_actor
from guimem.core.data import group_by_episode
from guimem.core.executor import ExecutorSpec, make_executor
from guimem.core.resume import ChunkCache
from guimem.core.store import load_episodes, load_subgoals
from guimem.eval.action_match import MatchConfig
from guimem.eval.closed_loop import replay_world
from guimem.models.embedding import embed_screenshots
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.routing.figures import layer_curve_figure, modality_wins_figure
from guimem.routing.jobs import record_steps
from guimem.routing.probe import CurveConfig, ProbeConfig, layer_curve, transfer_curve
from guimem.routing.records import SampledPreference
from guimem.routing.route_scores import preference_shares
from guimem.smg.memories import MEMORIES, load_memories, memory_embedders
from guimem.train.examples import examples_from_retrieval, sample_held_out
from guimem.train.folds import build_kfold_examples, rebuild_from
from guimem.viz.plotting import MEMORY_LABELS, figure_path, save_figure, write_plot_data

# %% [markdown]
# The frozen actor, the held-out episodes and the pool's (the memory episodes, with their subgoals):

# %%
enter_repo_root()
actor_spec, run_as = ActorSpec(**actor), ExecutorSpec(**executor)
sampling, probe_config, curve_config = SampledPreference(**preference), ProbeConfig(**probe), CurveConfig(**curve)
rule = sampling.rule
torch.set_num_threads(actor_spec.torch_threads)
test_root, memory_root = Path(world_dir) / "test", Path(world_dir) / "memory"
test = load_episodes(test_root, verify_images=False)  # validated by 00_world or 00_recorded
if replay_world(test_root) is None:  # recorded runs
    check_reads_recorded(actor_spec, str(test_root))
pool_episodes = load_episodes(memory_root, verify_images=False)
pool_episodes = pool_episodes[:max_pool_episodes] if max_pool_episodes else pool_episodes
subgoals = group_by_episode(s for s in load_subgoals(Path(subgoals_dir) / "memory.jsonl", store_root=memory_root))
in_process = run_as.kind == "local" and run_as.workers == 1  # else only the workers load the actor (a GPU each)
model = actor_spec.actor_model
shown = describe_actor(actor_spec.load(), model) if in_process else f"{model} (loaded by each worker)"
print(f"actor: {shown}; {len(test)} held-out episodes, {len(pool_episodes)} pool episodes")

# %% [markdown]
# ## Two sets of steps
#
# **Held-out steps** are the test demonstrations on the evaluation variants, each with the
# experience `03_retrieval_eval` retrieved for it: what every SwitchMem number is scored on. They
# are recorded for every memory — the routed ones (`memories`) and, as Table 1's baselines in
# `07_probe_router`, the others, shown to the same actor.
#
# **The probe pool** is what the probe and the router learn from, and must not be the held-out
# steps. It is the *memory* episodes — past experience on the same evaluation variants, of other
# tasks than the test's, and never seen by the actor in training. Each of them reads memories
# rebuilt without its own fold of tasks (as the actor's pretraining steps did, `make pretrain`), so no
# step retrieves its own episode or another demonstration of its goal.

# %%
images, texts = memory_embedders(memories_dir, image_embedder, text_embedder, cache_dir)
saved = load_memories(memories_dir, image_embedder, text_embedder, store_root=memory_root, cache_dir=cache_dir)
queries = embed_screenshots(images, memory_root, [s.screenshot for e in pool_episodes for s in e.steps])
rebuild = rebuild_from(saved, subgoals, memory_root)  # a memory of a kind, with the saved one's settings
pool_examples = build_kfold_examples(pool_episodes, memory_root, rebuild, memories, k_folds, seed, None, history_len,
                                     query_vectors=queries)
held_kinds = list(memories) + [m for m in MEMORIES if m not in memories]  # the others: Table 1's baselines
held_examples = sample_held_out(examples_from_retrieval(test, test_root, retrieval_dir, held_kinds, history_len),
                                max_eval_steps, seed)
print(f"{len(held_examples)} held-out examples ({len(held_kinds)} memories each), "
      f"{len(pool_examples)} pool examples ({len(memories)} memories each)")

# %% [markdown]
# ## Running the actor under every condition
#
# One forward pass per step and condition gives the greedy action (scored by both rules), the
# hidden state of every layer at `[ACT]` (the final prompt token) and — from the same pass's
# distributions — `preference.n_samples` sampled actions. A step's **sampled preference** is the share of
# image samples that match minus the share of text samples that match; it is *tied* when zero.
# Sampling is what makes the preference informative where greedy answers agree: the actor may give
# the same argmax under both renderings while one of them moves probability toward the right
# action. Each step's draws are seeded by the step itself, so they do not depend on the batch, and
# the text and the image rendering draw with the *same* seed (common random numbers): where the two
# prompts leave the actor's distribution unchanged, their samples are identical and the step is
# tied, so a preference is what the rendering changed, not the luck of two independent draws.
#
# **Where it runs.** The steps go to the executor the `executor` group describes, in chunks of a few
# forward batches: here, in this process; on `executor.workers` processes or Ray workers (GPU ones on a cluster),
# each loading the actor once. A chunk starts on a batch boundary, so every forward pass holds the
# same prompts wherever it runs, and the records are the same array for array.

# %%
size = held_examples[0].input.screenshot.size
rules = {"aitw": MatchConfig("aitw"), "learngui": MatchConfig("learngui", screen_size_px=size)}
run_on = make_executor(run_as)
resumed = ChunkCache(chunks_dir) if chunks_dir else None
held = record_steps(actor_spec, held_examples, rules, sampling, seed, run_on, cache=resumed)
pool = record_steps(actor_spec, pool_examples, rules, sampling, seed + 1, run_on, cache=resumed)
if resumed is not None:
    resumed.tell_hits("chunks of steps")  # on the terminal: the report does not depend on it
held.save(Path(out_dir) / "held_out")
pool.save(Path(out_dir) / "pool")
for name, rec in (("held-out", held), ("pool", pool)):
    print(name, {c: round(float(v.mean()), 3) for c, v in rec.hits[rule].items()}, f"({len(rec)} steps, {rule})")

# %% [markdown]
# ## Where the renderings disagree, and who wins (paper Fig. 2)
#
# Two ways to count a step as non-tied: **greedy** (exactly one of the two greedy answers is
# right: what a fixed choice would gain) and **sampled** (the sampled preference is not zero: the
# probe's labels). The paper reports that each modality wins a real share of the non-tied steps.

# %%
wins, shares_fig = {}, {}
for kind in memories:
    for split, rec in (("held_out", held), ("pool", pool)):
        sub = rec.of_memory(kind)
        greedy = sub.hits[rule]["image"].astype(float) - sub.hits[rule]["text"].astype(float)
        wins[f"{kind}/{split}/greedy"] = preference_shares(greedy)
        wins[f"{kind}/{split}/sampled"] = preference_shares(sub.preference(rule))
        for how in ("greedy", "sampled"):
            shares_fig[f"{MEMORY_LABELS[kind]}, {split.replace('_', '-')}, {how}"] = wins[f"{kind}/{split}/{how}"]
fig = modality_wins_figure(shares_fig)
save_figure(fig, figure_path(figures_dir, "layer_analysis", "modality_wins"))

# %% [markdown]
# ## The preference, read from the hidden-state shift, layer by layer
#
# On the pool's non-tied SMG steps, the probe (standardise → PCA → logistic regression) is fitted
# on `h_I − h_T` at each layer and scored out of fold, with folds by episode (a step is never
# scored by a probe that saw its episode); intervals resample episodes. A second curve fits the
# probe on the whole pool and scores it on the held-out steps: does what it learned transfer to
# other tasks? Layer 0 is the embedding layer's output at `[ACT]`: the same token under both
# renderings, so its shift is exactly zero and it sits at chance by construction; from layer 1 on
# the actor has read the memory against the screen and the goal.

# %%
pool_smg, held_smg = pool.of_memory("smg").non_tied(rule), held.of_memory("smg").non_tied(rule)
y_pool, y_held = pool_smg.preference(rule) > 0, held_smg.preference(rule) > 0
curve_cv = layer_curve(pool_smg.shift(), y_pool, pool_smg.episodes, probe_config, curve_config, seed)
curve_transfer = transfer_curve(pool_smg.shift(), y_pool, held_smg.shift(), y_held, held_smg.episodes, probe_config,
                                curve_config, seed)
fig = layer_curve_figure({"pool, cross-validated by episode": curve_cv, "pool → held-out steps": curve_transfer})
save_figure(fig, figure_path(figures_dir, "layer_analysis", "layers"))

# %% [markdown]
# The curves' data (for `dvc plots`) and their numbers, layer by layer:

# %%
write_plot_data(plots_dir, "layer_analysis", "layers",
                [{"layer": a["layer"], "cv_auc": round(a["auc"], 4), "cv_accuracy": round(a["accuracy"], 4),
                  "transfer_auc": round(b["auc"], 4), "transfer_accuracy": round(b["accuracy"], 4)}
                 for a, b in zip(curve_cv, curve_transfer)])
for a, b in zip(curve_cv, curve_transfer):
    print(f"layer {a['layer']}: CV AUC {a['auc']:.3f} [{a['auc_ci'][0]:.3f}, {a['auc_ci'][1]:.3f}]   "
          f"held-out AUC {b['auc']:.3f} [{b['auc_ci'][0]:.3f}, {b['auc_ci'][1]:.3f}]")

# %% [markdown]
# ## What the numbers say
#
# Read the layer curve against its intervals: here the signal is said to *grow with depth* only if
# the last layer's whole 95% interval lies above the first block's AUC. Written out below either
# way; the README carries the finding across seeds.

# %%
first, last = curve_cv[1], curve_cv[-1]
if "insufficient" in last:
    print("No probe could be fitted on the pool:", last["insufficient"], "(more draws, a higher temperature or a "
          "larger pool give more non-tied steps; 07_probe_router needs them)")
grows = bool(last["auc_ci"][0] > first["auc"])  # False when either is NaN
print(f"CV AUC at layer 1: {first['auc']:.3f}, at layer {last['layer']}: {last['auc']:.3f} "
      f"[{last['auc_ci'][0]:.3f}, {last['auc_ci'][1]:.3f}]: the signal "
      + ("grows with depth (the last layer's interval lies above layer 1)." if grows
         else "does not clearly grow with depth here (the last layer's interval reaches layer 1's value)."))

# %% [markdown]
# ## Metrics
# The headline numbers (`make metrics`; a few of them in `metrics/headline.json`, `dvc metrics show`): the SMG's non-tied shares and image
# wins on the held-out steps and the probe's AUC; every number behind them goes to
# `results/layer_analysis.json`.

# %%
hit_rates = {split: {r: {c: float(v.mean()) for c, v in rec.hits[r].items()} for r in rules}
             for split, rec in (("held_out", held), ("pool", pool))}
results = {"steps": {"held_out": len(held), "pool": len(pool)}, "rule": rule, "n_samples": sampling.n_samples,
           "temperature": sampling.temperature, "hit_rates": hit_rates,
           "modality_wins": wins, "layer_curve_cv": curve_cv, "layer_curve_transfer": curve_transfer,
           "signal_grows_with_depth": bool(grows), "pool_episodes": len(pool_episodes)}
s = wins["smg/held_out/greedy"]
metrics = {
    "held_out_steps": len(held.of_memory("smg")), "pool_steps": len(pool.of_memory("smg")),
    "smg_greedy_non_tied": round(s["non_tied_share"], 4), "smg_greedy_image_wins": round(s["image_wins"], 4),
    "smg_sampled_non_tied": round(wins["smg/held_out/sampled"]["non_tied_share"], 4),
    "smg_sampled_image_wins": round(wins["smg/held_out/sampled"]["image_wins"], 4),
    "probe_cv_auc_first_block": round(first["auc"], 4), "probe_cv_auc_last_layer": round(last["auc"], 4),
    "probe_transfer_auc_last_layer": round(curve_transfer[-1]["auc"], 4),
}
report(results_path, results, metrics_path, metrics)

# %% [markdown]
# # 04 · Actor: a miniature multimodal agent that reads its memory as text or as an image
#
# **What this stage does.** It trains, by behaviour cloning on the expert's actions at every
# state of the training demonstrations and then by DAgger on its own rollouts, a small
# transformer that acts on the phone: it sees the current screenshot (as patches), the
# goal and its last few actions (as tokens) and, optionally, the experience a memory retrieved
# for this screen, **as a text block, as an image, as both, or not at all**, and it answers with
# an action (type, screen point, swipe direction, text to type, app to open). After this stage
# the actor is frozen; nothing downstream changes its weights.
#
# **Why.** The SMG paper and SwitchMem both need an actor that *uses* retrieved experience,
# and SwitchMem studies *how* a frozen actor uses the same experience shown as text versus as
# an image, through its hidden states at the final prompt token. A large VLM does not fit a
# laptop pipeline, so this one is trained here in minutes, on the same memories the later
# stages query, and it exposes the hidden state of every layer at its final token.
#
# **Reads** `data/world/{train,test}/` (and `data/world/memory/`'s manifest), `data/segmentation/train.jsonl`, `data/graph_build/`
# (the memories, to rebuild them without each training episode) and `data/retrieval_eval/`
# (the experience each memory retrieved at every held-out step). **Writes** `data/actor/model/`
# (`config.json`, `model.safetensors`, `vocab.json`: all that `05_closed_loop` reads), its
# headline numbers to `metrics/actor.json`, every score behind them to `results/actor.json`,
# the training curves to `plots/actor_training_curves.csv`, and
# `figures/actor_{training_curves,accuracy_by_condition,memory_effect,modality_contest}.png`.
#
# **Running it yourself.** `dvc repro` runs this notebook with the paths above. Opened in
# JupyterLab (`make lab`), it reads the pipeline's `data/` and its defaults below write under
# `scratch/`, so trying a parameter here never touches the pipeline's outputs (the stage takes
# about 14 minutes on 2 cores; `max_train_episodes` and `training["epochs"]` shrink it). Saving the notebook
# keeps only your edits to its cells (`git checkout notebooks/04_actor.py` undoes them).
#
# **Paper.** The actor of the SMG paper's main table (there: Qwen3-VL-8B prompted with the
# memory block) and the frozen actor SwitchMem routes between text and image memory for —
# here a 6-layer miniature trained in the pipeline.

# %% tags=["parameters"]
world_dir = "data/world"  # episode stores from 00_world (train/ to learn from, test/ to score on)
subgoals_dir = "data/segmentation"  # subgoals from 01_segmentation (train.jsonl), to rebuild memories per fold
memories_dir = "data/graph_build"  # the memories (and screen projection) from 02_graph_build
retrieval_dir = "data/retrieval_eval"  # what each memory retrieved at every test step, from 03_retrieval_eval
out_dir = "scratch/actor"  # the trained actor goes to <out_dir>/model (the pipeline: data/actor)
image_embedder = "efficientnet_lite0"  # must be the embedder the memories were built with
text_embedder = "minilm"  # must be the intent embedder the memories were built with
seed = 0  # folds, modality draws, initialisation and batch order
k_folds = 8  # training memories are rebuilt k times, each without one fold of the training tasks
kinds_per_step = 1  # memory kinds (of smg, flat, action_graph, task_graph) drawn per training step
model = {}  # the actor's shape: fields of ActorConfig (guimem.actors.mini.config); unset: its defaults
training = {}  # behaviour cloning: fields of TrainConfig (guimem.actors.mini.train); unset: its defaults
dagger_rounds = 1  # DAgger rounds after behaviour cloning: roll out, relabel with the expert, train on (0: none)
dagger_tasks = 200  # training tasks rolled out per round (each in a fresh world seed, on its own variant)
dagger_epochs = 2  # epochs over the aggregated examples per round
dagger_max_steps = 20  # step budget of a rollout
dagger_beta = 0.5  # DAgger's mixing: the share of a rollout's actions the expert carries out (0: the actor alone)
max_train_episodes = 0  # size knob: learn from the first N training episodes only (0: all)
max_eval_steps = 0  # held-out test steps scored per condition (a fixed random sample; 0: all)
torch_threads = 2  # CPU threads for training (results are reproducible for a fixed count)
cache_dir = ".cache/guimem/embeddings"  # content-hash embedding cache (not tracked)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
plots_dir = "scratch/plots"  # the data behind the training curves, CSV (the pipeline: plots, read by dvc.yaml's plots)
metrics_path = "scratch/metrics/actor.json"  # headline numbers (the pipeline: metrics/actor.json)
results_path = "scratch/results/actor.json"  # every score behind them (the pipeline: results/actor.json)

# %%
import dataclasses
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from guimem.actors.mini.config import ActorConfig
from guimem.actors.mini.train import STRICT_MATCH, TrainConfig, majority_action, train_actor
from guimem.core.data import group_by_episode
from guimem.core.policy import MODALITIES
from guimem.core.store import load_episodes, load_subgoals
from guimem.eval.closed_loop import replay_world_config
from guimem.models.embedding import embed_screenshots
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.smg.memories import MEMORIES, count_tokens, load_memories, memory_embedders
from guimem.train.dagger import run_dagger
from guimem.train.examples import examples_from_retrieval, memory_names_target, sample_held_out
from guimem.train.folds import build_kfold_examples, fold_memories, rebuild_from, validation_split
from guimem.viz.plotting import MEMORY_LABELS, MODALITY_COLORS, figure_path, save_figure, write_plot_data

# %% [markdown]
# The training and held-out episodes, and the subgoals of the training ones:

# %%
enter_repo_root()
torch.set_num_threads(torch_threads)
shape = ActorConfig(**model)  # the actor's shape: actor.model's fields over ActorConfig's defaults
train_root, test_root = Path(world_dir) / "train", Path(world_dir) / "test"
train = load_episodes(train_root, verify_images=False)  # validated by 00_world
train = train[:max_train_episodes] if max_train_episodes else train
test = load_episodes(test_root, verify_images=False)
subgoals = group_by_episode(s for s in load_subgoals(Path(subgoals_dir) / "train.jsonl", store_root=train_root))
print(f"{len(train)} training episodes ({sum(len(e.steps) for e in train)} steps), "
      f"{len(test)} held-out episodes ({sum(len(e.steps) for e in test)} steps)")

# %% [markdown]
# ## Training examples: memory that never holds the step's own task
#
# A demonstration step is shown together with experience retrieved for its screen. If that
# experience came from a memory that contains the very same task — its own episode, or another
# episode of the same goal on another variant — the actor would learn to copy its own future
# from memory, and then meet nothing like it at test time, where memory holds other tasks only
# (`memory_test_goal_overlap` is 0 in `00_world`). So the training episodes are split into
# `k_folds` folds *by task* (every episode of one goal in one fold), and the steps of each fold
# read memories rebuilt (same kind, same parameters as in `02_graph_build`) from the *other*
# folds only: what a step can learn from its memory is what experience of other tasks teaches —
# what a glyph does, what a word is called here, where a switch sits. And a memory is one
# phone's experience: a step reads the other folds' episodes *on its own variant* only, as a
# held-out step reads the memory of the evaluation phone. Experience of another variant would
# show glyphs of another design under other words, and teach the actor that a remembered
# picture says nothing about the screen in front of it. And it must be about as *dense* as the
# evaluation phone's (240 episodes): the actor learns to follow a remembered picture only as far
# as following it is right in training. So the training episodes run on a few phones, 150 each,
# and `k_folds` is 8: a step's memory holds about 130 episodes of its phone's other tasks. Spread
# over fifteen phones of 27 episodes (the setting before), the memory image showed the target of
# a label-free touch step on 14% of training steps against 67% at test
# (`benchmarks/memory_shows_target.py`), and behaviour cloning learned to leave it unread.
# Each step gets `kinds_per_step` memory kinds drawn at random, so that one actor learns to
# read all four: Subgoal-Graph, Subgoal-Flat, Action-Graph and Task-Graph. Which *modality*
# it sees (none, text, image, both) is drawn again at every epoch. A share of the training
# tasks (`training["validation_share"]` of the episodes, whole goals) is kept out of learning:
# after every epoch the actor is scored on them, and the weights kept are those of the best epoch
# there — tasks it did not learn, as the test's are, on the training variants, never on a test or
# memory episode.

# %%
images, texts = memory_embedders(memories_dir, image_embedder, text_embedder, cache_dir)
saved = load_memories(memories_dir, image_embedder, text_embedder, store_root=Path(world_dir) / "memory",
                      cache_dir=cache_dir)  # their settings are what the training folds' memories copy
queries = embed_screenshots(images, train_root, [s.screenshot for e in train for s in e.steps])
rebuild = rebuild_from(saved, subgoals, train_root)  # a memory of a kind, with the saved one's settings
folds = fold_memories(train, rebuild, MEMORIES, k_folds, seed)  # kept: DAgger's rollouts read them too
examples = build_kfold_examples(train, train_root, rebuild, MEMORIES, k_folds, seed, kinds_per_step,
                                shape.max_history, query_vectors=queries, folds=folds)
config = TrainConfig(**training, model=model)
learn, validate = validation_split(train, config.validation_share, seed)  # checkpoints are chosen on validate
kept_out = {e.id for e in validate}
selection = [ex for ex in examples if ex.episode_id in kept_out]
examples = [ex for ex in examples if ex.episode_id not in kept_out]
print(f"{len(examples)} training examples ({len(learn)} episodes), {len(selection)} validation examples "
      f"({len(validate)} episodes); kinds:", {k: sum(ex.memory_kind == k for ex in examples) for k in MEMORIES})
demonstrated = [ex.target for ex in examples]  # the floor's majority: the demonstrations' (DAgger adds its own)
print("\nOne of them — goal:", examples[3].input.goal, "| demonstrated:", examples[3].target.describe())
print(examples[3].input.memory_text)

# %% [markdown]
# ## Held-out examples: the experience retrieved at every test step
#
# For scoring, each held-out step (on an evaluation variant the actor never trained on) reads
# the experience `03_retrieval_eval` retrieved for it from the memories of `02_graph_build` —
# past experience of other tasks on that variant, as the later stages will see it. A fixed random sample of `max_eval_steps` steps is scored under every
# condition: memory kind x modality (none, text, image, both).

# %%
held = sample_held_out(examples_from_retrieval(test, test_root, retrieval_dir, MEMORIES, shape.max_history),
                       max_eval_steps, seed)
steps = sorted({(ex.episode_id, ex.step) for ex in held})
watch = [ex for ex in held if ex.memory_kind == "smg"][:200]  # scored after every epoch
print(f"{len(steps)} held-out steps x {len(MEMORIES)} memories = {len(held)} examples")
memory_cut = {kind: float(np.mean([count_tokens(ex.input.memory_text) > shape.max_memory_tokens
                                   for ex in held if ex.memory_kind == kind])) for kind in MEMORIES}
print("share of memory blocks longer than the actor's budget (cut):", {k: f"{v:.1%}" for k, v in memory_cut.items()})

# %% [markdown]
# ## The actor and its prompt
#
# One token sequence: `[elements] [screen patches] [goal] [history] [memory text] [memory image] [ACT]`.
# The actor reads the screen **element by element**, as GUI agents read an accessibility tree:
# one token per UI element, the sum of its label's word embeddings (its text, else its
# accessibility description; a label-free icon has none), its role with its state (`toggle:on`, a
# focused `field`; `role_channel`), its box, the grid cell of its centre, and its **pixels** — the
# element cut out of the full-size screenshot and scaled to `crop_size` squared, so that a ⋮, a ✓ or
# a photo is visible even where a thumbnail would blur it. A coarse view of the whole screen
# (48 x 96 pixels in 8 x 8 patches) adds the layout around them. Each labelled element also
# carries an *exact-match* code, as in reading-comprehension models (DrQA): whether none, some or
# all of its label's words occur in the goal and in the memory text shown. Minutes of training on
# a few thousand steps do not teach a from-scratch transformer to align words across the prompt;
# this one feature does, and the model still has to learn when to trust it.
#
# The `[ACT]` token adds the types of the last two actions (`act_context`), and the action-type
# logits also get a *wide* linear read of those types and of the element roles on screen
# (wide-and-deep, trained at a higher learning rate): which kind of action comes next is mostly a
# function of these facts — a focused field right after a tap: type; a toggle just switched on: done.
#
# **Memory, two ways.** As text: the memory block, word tokens, up to `max_memory_tokens` (its
# share of blocks cut is reported below; words say of a label-free icon only its role and region).
# As an image: the top-1 retrieved item's first screen with its actions marked where they were
# made, patched like the live screen and given the *live* grid's positions (a mark and the element
# at that place now share a position code), and the crops of the elements it touched, which share
# the elements' pixel projection (a remembered glyph and the same glyph on screen start alike).
#
# **Glyphs the weights cannot know.** On the evaluation phone every toolbar glyph is drawn in a
# design no training phone shows, and none is labelled: only a picture of having used it says what
# it does. On a training phone the weights learn the glyphs, and then nothing in training rewards
# reading the picture. So each training and validation step (a share `training.novel_glyphs`) is
# shown with its bare icons redrawn in fresh designs, and the memory crops that showed them redrawn
# alike (`guimem.actors.mini.augment`; the back arrow and the other icons every phone draws the
# same are kept). The held-out steps are shown as they are.
#
# Every head reads the final `[ACT]` token: the action type, a **pointer over the elements** (a
# touch lands on the chosen element's centre, and is still scored by the AITW rules on its
# coordinates), a swipe direction, a span of the goal to type, and the app to open.

# %%
config = dataclasses.replace(config, max_eval_examples=len(watch))
actor, history = train_actor(examples, config, seed, eval_examples=watch, select_examples=selection)
n_params = sum(p.numel() for p in actor.model.parameters())
print(f"{n_params:,} parameters")  # speed: benchmarks/bench_actor.py (timings would make this report differ run to run)
bc_epochs = len(history.train_loss)

# %% [markdown]
# ## DAgger: the actor's own detours, relabelled by the expert
#
# Behaviour cloning shows the actor only the states the demonstrator reached. Once it errs it is
# somewhere no example showed it, and it does not find its way back. So, for `dagger_rounds`
# rounds: the actor plays `dagger_tasks` training tasks itself (each in a fresh world seed, on
# its own train variant, reading a memory built without its episode's fold, in a modality drawn
# as in training), the expert — right from any state (`00_world`) — labels every state it
# visits, and the actor trains on for `dagger_epochs` epochs over all examples so far. While it
# plays, the expert carries out a `dagger_beta` share of the actions (DAgger's mixture policy,
# Ross et al. 2011): left alone, this actor is lost within a few steps and most of the states it
# visits are loops it has fallen into (a round of 200 rollouts ended 81 on the step budget, 80% of
# its states with another action type than the expert's, and it lowered validation accuracy so far
# that it was undone); with the expert taking every other step, the states labelled are its
# detours from near the expert's path, the ones it must learn to leave. A round is kept only if it
# holds the validation accuracy: its best epoch there is undone when it is *significantly* worse
# than the weights it started from — it breaks more validation steps than it fixes, at p < 0.05 in
# the exact sign test on those steps (`guimem.actors.mini.train.round_holds`). Comparing the two
# scores alone let one step of 352 decide, and which actor the later stages play then followed the
# last bits of a machine's arithmetic.

# %%
def train_on(examples, r, actor):
    """The actor trained on for ``dagger_epochs`` epochs over ``examples`` after round ``r`` (curve appended)."""
    return train_actor(examples, dataclasses.replace(config, epochs=dagger_epochs), seed + 1 + r,
                       eval_examples=watch, init=actor, history=history, select_examples=selection)[0]


actor, examples, dagger = run_dagger(actor, examples, train_on, learn, folds,
                                     replay_world_config(train_root, dagger_max_steps), dagger_rounds, dagger_tasks,
                                     seed, config.modality_weights, shape.max_history, beta=dagger_beta)
for r, stats in enumerate(dagger):
    stats["kept_epoch"] = history.selected[r + 1] if history.selected else dagger_epochs  # 0: undone (see above)
    stats["validation_test"] = history.round_tests[r] if history.round_tests else None  # fixed, broken, p
    print(f"round {r + 1}: the actor succeeded on {stats['success']} of {stats['episodes']} rollouts; {stats['kept']} "
          f"new examples ({stats['type_disagreement_rate']:.0%} of states: another action type than the expert's); "
          + (f"kept its epoch {stats['kept_epoch']}" if stats["kept_epoch"] else "undone (validation did not hold)")
          + (" | on validation it fixes {fixed} steps and breaks {broken} (sign test p = {p_value})".format(
              **stats["validation_test"]) if stats["validation_test"] else ""))
actor.save(Path(out_dir) / "model")

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
ep = np.arange(1, len(history.train_loss) + 1)
a.plot(ep, history.train_loss, "o-", color="#333333")
a.set(xlabel="epoch", ylabel="training loss (sum of heads)", title="Training loss")
for ax in (a, b):
    if bc_epochs < len(ep):
        ax.axvline(bc_epochs + 0.5, color="#bbbbbb", lw=1, ls=":")  # DAgger from here on
b.plot(ep, history.eval_step_accuracy, "o-", color=MODALITY_COLORS["both"], label="step accuracy (held-out test)")
b.plot(ep, history.validation_step_accuracy, "^-", color="#333333", label="step accuracy (validation: selects)")
b.plot(ep, history.eval_type_accuracy, "s--", color="#999999", label="type accuracy")
b.set(xlabel="epoch", ylabel="share of steps", ylim=(0, 1), title="Step accuracy (modality drawn)")
b.legend()
save_figure(fig, figure_path(figures_dir, "actor", "training_curves"))
write_plot_data(plots_dir, "actor", "training_curves", [
    {"epoch": int(e), "train_loss": round(loss, 4), "held_out_step_accuracy": round(step, 4),
     "held_out_type_accuracy": round(kind, 4), "validation_step_accuracy": round(val, 4)}
    for e, loss, step, kind, val in zip(ep, history.train_loss, history.eval_step_accuracy, history.eval_type_accuracy,
                                        history.validation_step_accuracy)])

# %% [markdown]
# ## Does the actor beat a trivial policy, and does memory help it?
#
# Step accuracy: the AITW rules for touches (two taps match inside the same enlarged UI box or
# within 0.14), typed text by token F1 ≥ 0.5, the app name for `open_app`. The floor is the
# **majority action** of the training demonstrations (their commonest type, at that type's commonest patch).
# Then every held-out step is shown no memory, or the experience its memory retrieved as text,
# as an image, or both.

# %%
from guimem.eval.action_match import paired_counts, step_accuracy
from guimem.eval.figures import accuracy_by_condition_figure, memory_effect_figure, modality_contest_figure
from guimem.eval.memory_effect import names_target_split, right_experience_split, shuffled_images
from guimem.eval.modality import (DETERMINED, contest, contest_by_group, information_groups, rendering_measures,
                                  step_groups)
from guimem.phone.variants import unseen_words
from guimem.eval.step_table import step_table
from guimem.smg.retrieval import read_results

# %%
world = replay_world_config(test_root)  # the world the held-out episodes ran in
majority = majority_action(demonstrated, actor.config.screen_grid)
by_kind = {kind: [ex for ex in held if ex.memory_kind == kind] for kind in MEMORIES}  # same steps, same order
baseline = step_accuracy([majority] * len(steps), [ex.target for ex in by_kind["smg"]],
                         [ex.input.elements for ex in by_kind["smg"]], STRICT_MATCH)
print(f"majority action {majority.describe()}: step accuracy {baseline['step_accuracy']:.3f}")
hits, tables = {}, {}  # condition -> (step hits, type hits), one per held-out step; memory -> its step table
for kind in MEMORIES:  # each step featurised once per memory; "none" is the same prompt for every memory
    table = tables[kind] = step_table(actor, by_kind[kind], MODALITIES if kind == "smg" else MODALITIES[1:], STRICT_MATCH)
    for m, h in table.items():
        hits["none" if m == "none" else f"{kind}/{m}"] = (h.step, h.type)
by_condition = {name: {"step_accuracy": float(h.mean()), "type_accuracy": float(t.mean())} for name, (h, t) in hits.items()}
print(f"{'condition':24s}{'step acc':>10s}{'type acc':>10s}")
for name, r in by_condition.items():
    print(f"{name:24s}{r['step_accuracy']:10.3f}{r['type_accuracy']:10.3f}")

# %% [markdown]
# Per demonstrated action type (no memory): which decisions the actor has learned. Some are
# ambiguous by construction and stay hard: on the launcher the demonstrator opens the app by
# its icon or by `open_app` at random, `back` mostly undoes one of its own random slips, and
# `enter` follows typing only where a search must be submitted. `done` and `type` follow from
# what the screen shows (a toggle switched on, a field focused) and the last action.

# %%
smg_examples = by_kind["smg"]
by_type = {}
for t in sorted({ex.target.type for ex in smg_examples}):
    mask = np.array([ex.target.type == t for ex in smg_examples], dtype=bool)
    by_type[t] = {"steps": int(mask.sum()), "step_accuracy": round(float(hits["none"][0][mask].mean()), 4),
                  "type_accuracy": round(float(hits["none"][1][mask].mean()), 4)}
    print(f"{t:12s}{by_type[t]['steps']:6d} steps  step acc {by_type[t]['step_accuracy']:.3f}  "
          f"type acc {by_type[t]['type_accuracy']:.3f}")

# %% [markdown]
# **What each step needs to be known.** On an app variant the actor never trained on, some
# steps follow from the goal and the screen alone — touching the control the goal names, typing
# the text it quotes, `done` once the screen shows the task done — and others need what only
# experience of this variant gives (which unnamed menu hides the setting, which bare icon does
# what) or a recovery. On the held-out steps of clean demonstrations (no noise), with no memory:

# %%
clean = {e.id for e in test if e.provenance.get("demonstrator") == "clean"}
is_clean = np.array([ex.episode_id in clean for ex in smg_examples], dtype=bool)
info = information_groups([ex.input for ex in smg_examples], [ex.target for ex in smg_examples])
determined = np.logical_or.reduce([info[g] for g in DETERMINED]) & is_clean
by_information = {g: {"steps": int((m & is_clean).sum()),
                      **{c: round(float(hits[k][0][m & is_clean].mean()), 4) if (m & is_clean).any() else None
                         for c, k in (("none", "none"), ("smg_text", "smg/text"), ("smg_image", "smg/image"))}}
                  for g, m in {**info, "determined by goal and screen": determined}.items()}
for g, r in by_information.items():
    print(f"{g:30s}{r['steps']:5d} clean steps: none {r['none']}, SMG text {r['smg_text']}, SMG image {r['smg_image']}")

# %%
# left: the absolute level (shares from zero); right: each memory kind x modality minus no memory, on the
# same steps, with its 95% paired interval, the steps it fixes and breaks, and the sign test's p-value
fig = accuracy_by_condition_figure({name: h for name, (h, _) in hits.items()}, MEMORIES, MODALITIES[1:],
                                   baseline["step_accuracy"])
save_figure(fig, figure_path(figures_dir, "actor", "accuracy_by_condition"))

# %% [markdown]
# The same held-out steps are scored under every condition, so a difference can be read step
# by step: how many steps does showing the memory fix, and how many does it break? Only those
# discordant steps carry evidence; the exact sign test (McNemar's) gives the chance of a split
# at least this uneven if memory made no difference.

# %%
base = hits["none"][0]
paired = {name: paired_counts(h, base) for name, (h, _) in hits.items() if name != "none"}
for name, c in paired.items():
    print(f"{name:22s} fixes {c['fixed']:3d} steps, breaks {c['broken']:3d}  (sign test p = {c['p_value']:.3f})")


# %% [markdown]
# ## Text or image: the same experience, two renderings
#
# SwitchMem's premise: the top-1 retrieved demonstration shown as text and shown as an image
# lead the frozen actor to different actions on different steps. On the held-out steps with the
# SMG's memory: the share of *non-tied* steps (exactly one rendering right), each rendering's
# share of them, the best fixed rendering and the per-step oracle between the two (an analysis
# reference that sees which one was right) — and where each wins, by what the step needs.

# %%
unseen = unseen_words(world.train_variants, world.eval_variants)  # the evaluation variants' synonyms
groups = step_groups([ex.input for ex in smg_examples], [ex.target for ex in smg_examples], unseen)
text_hits, image_hits = hits["smg/text"][0], hits["smg/image"][0]
modality = {"overall": contest(text_hits, image_hits), "by_group": contest_by_group(text_hits, image_hits, groups)}
o = modality["overall"]
print(f"non-tied steps {o['non_tied_share']:.1%} ({o['non_tied']} of {o['steps']}); text wins {o['text_wins']:.0%}, "
      f"image wins {o['image_wins']:.0%}; best fixed {o['best_fixed']:.3f}, per-step oracle {o['oracle']:.3f} "
      f"(+{100 * o['oracle_gain']:.1f} points)")
for name, g in modality["by_group"].items():
    print(f"  {name:18s} {g['steps']:4d} steps: text {g['text_accuracy']:.3f}, image {g['image_accuracy']:.3f}, "
          f"non-tied {g['non_tied_share']:.1%}")
fig = modality_contest_figure(modality["by_group"], modality["overall"])
save_figure(fig, figure_path(figures_dir, "actor", "modality_contest"))

# %% [markdown]
# **Does the actor read each rendering at all?** A contest means something only if both renderings
# move the actor. Four checks on the same SMG steps: how often the image leaves the action that no
# memory gives; what showing *another* step's image (from another episode) costs against the right
# one; and how each rendering does on its own ground — a target that is a bare glyph (only the
# picture shows it), and a target whose label is a word no training variant showed (only the text
# quotes it; a small crop of a text row does not read).

# %%
shuffled = step_table(actor, shuffled_images(smg_examples, seed), ["image"], STRICT_MATCH)["image"]
reading = rendering_measures(tables["smg"]["none"].actions, tables["smg"]["image"].actions,
                             {"text": text_hits, "image": image_hits, "shuffled image": shuffled.step}, groups)
for name, value in reading.items():
    print(f"{name:30s} {value:.3f}" if isinstance(value, float) else f"{name:30s} {value}")

# %% [markdown]
# ## Where could memory help at all?
#
# Memory can only add something where it says what the goal does not. A simple, checkable
# case: the demonstrator touched a labelled element whose label the memory text quotes (as in
# `tap "Display"`) while the goal never names it. The share of such steps bounds what reading
# the text can add; the accuracy on them shows whether the actor exploits it.

# %%
def columns(kind):
    """The step hits of memory ``kind`` per modality, ``none`` included (the same steps)."""
    return {m: hits["none" if m == "none" else f"{kind}/{m}"][0] for m in MODALITIES}


informative = {}
for kind in MEMORIES:
    names = np.array([memory_names_target(ex) for ex in by_kind[kind]], dtype=bool)
    informative[kind] = names_target_split(columns(kind), names)
    text, elsewhere = informative[kind]["text_vs_none"], informative[kind]["text_vs_none_elsewhere"]
    print(f"{MEMORY_LABELS[kind]:14s} memory names the target in {informative[kind]['share_of_steps']:.1%} of steps; "
          "accuracy there: " + ", ".join(f"{m} {informative[kind][m]:.2f}" for m in MODALITIES)
          + f"; text vs none +{text['fixed']}/-{text['broken']} (p = {text['p_value']:.3f}), "
          f"elsewhere +{elsewhere['fixed']}/-{elsewhere['broken']} (p = {elsewhere['p_value']:.3f})")

# %% [markdown]
# Read the two splits together. Where the memory quotes the element to touch and the goal
# does not, showing the text should fix steps and break few; everywhere else it can only
# distract, and a small actor trained for minutes can be distracted by a long block that says
# nothing new (each memory-text word's match with the goal is what lets it tell the two apart).
# How much memory adds overall is then mostly the share of steps where experience carries what
# the goal leaves out — a property of the tasks (of this world, of a benchmark), not only of the
# actor.
#
# ## Memory of the right experience
#
# A memory helps only when what it retrieved is the right experience. `03_retrieval_eval`
# recorded, for every held-out step, whether the items shown hold the true next subgoal type
# (`hit_shown`). Split the steps that way: where the right experience is shown, does reading
# it beat no memory; where it is not, does the wrong experience mislead?

# %%
shown_right = {}
for kind in MEMORIES:
    flags = {(r["episode_id"], int(r["step"])): bool(r["hit_shown"])
             for r in read_results(Path(retrieval_dir) / kind / "steps.jsonl")}
    right = np.array([flags[(ex.episode_id, ex.step)] for ex in by_kind[kind]], dtype=bool)
    shown_right[kind] = right_experience_split(columns(kind), right)
    r, w = shown_right[kind]["text/right"], shown_right[kind]["text/wrong"]
    print(f"{MEMORY_LABELS[kind]:14s} right experience shown at {right.mean():.0%} of steps; as text there "
          f"{r['none']:.3f} -> {r['memory']:.3f} (+{r['fixed']}/-{r['broken']}, p = {r['p_value']:.3f}); "
          f"elsewhere {w['none']:.3f} -> {w['memory']:.3f} (+{w['fixed']}/-{w['broken']})")

# %% [markdown]
# The two splits side by side: held-out step accuracy with no memory and with the memory's
# text, where it retrieved the right experience and where it did not (left), and where its text
# quotes the element to touch that the goal does not name (right). Same steps within each pair.

# %%
# shares from zero with Wilson intervals; the step counts, fixed/broken steps and sign-test p-values written in
fig = memory_effect_figure(shown_right, informative, MEMORIES, MODALITIES, len(steps))
save_figure(fig, figure_path(figures_dir, "actor", "memory_effect"))

# %% [markdown]
# ## Metrics
# The headline numbers (`make metrics`; a few of them in `metrics/headline.json`, `dvc metrics show`): step accuracy with no memory and with
# the SMG's memory in each modality, beside the majority action; the text-image contest; the four
# reading measures. Every score behind them (each memory and condition's step and type accuracy,
# the paired counts and sign tests, the splits above, the training history) goes to
# `results/actor.json`.

# %%
results = {
    "train_examples": len(examples), "train_episodes": len(learn), "validation_episodes": len(validate),
    "validation_examples": len(selection), "held_out_steps": len(steps),
    "behaviour_cloning_epochs": bc_epochs, "dagger": dagger, "memory_text_cut_share": memory_cut,
    "modality_contest": modality, "by_information_clean": by_information, "reading": reading,
    "parameters": n_params, "layers": actor.config.num_hidden_layers, "d_model": actor.config.hidden_size,
    "history": {"train_loss": [round(v, 4) for v in history.train_loss],
                "held_out_step_accuracy": [round(v, 4) for v in history.eval_step_accuracy],
                "validation_step_accuracy": [round(v, 4) for v in history.validation_step_accuracy],
                "kept_epochs": history.selected},
    "majority_action": {"action": majority.describe(), "step_accuracy": round(baseline["step_accuracy"], 4)},
    "step_accuracy": {k: round(r["step_accuracy"], 4) for k, r in by_condition.items()},
    "type_accuracy": {k: round(r["type_accuracy"], 4) for k, r in by_condition.items()},
    "by_type_none": by_type,
    "memory_names_target": {k: {m: v if isinstance(v, dict) else round(v, 4) for m, v in d.items()}
                            for k, d in informative.items()},
    "fixed_broken_vs_none": paired,
    "right_experience_shown": shown_right,
}

# %%
headline = ["none", "smg/text", "smg/image", "smg/both"]  # the baseline memories' own: results["step_accuracy"]
metrics = {"held_out_steps": len(steps), "majority_step_accuracy": results["majority_action"]["step_accuracy"]}
metrics |= {f"step_accuracy_{c.replace('/', '_')}": results["step_accuracy"][c] for c in headline}
metrics |= {"smg_text_image_non_tied": round(o["non_tied_share"], 4), "smg_text_image_oracle_gain": round(o["oracle_gain"], 4)}
metrics |= {k: round(reading[k], 4) for k in ("image_vs_none_agreement", "shuffled_image_drop",
                                              "label_free_image_minus_text", "synonym_text_minus_image")}
report(results_path, results, metrics_path, metrics)

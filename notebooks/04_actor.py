# %% [markdown]
# # 04 · Actor: meet the frozen actor, and how it reads its memory as text or as an image
#
# **What this stage does.** It loads the frozen actor every later stage plays — a small multimodal
# transformer that sees the current screenshot (as elements and patches), the goal, what its last
# few actions touched or typed and whether the screen changed, and, optionally, the experience a
# memory retrieved for this screen **as a text block, as an image, as both, or not at all**, and
# answers with an action (type, screen point, swipe direction, text to type, app to open). It
# reports what the actor can do without experience, and how it reads each rendering of experience
# on the held-out steps of the evaluation phone. Nothing here changes the actor's weights.
#
# **Why.** Both papers study a *frozen, pretrained* actor (the SMG paper: Qwen3-VL-8B prompted with
# the memory block; SwitchMem: Qwen3.5-9B, routed between text and image memory through its hidden
# states at the final prompt token). Competence comes from pretraining; memory supplies what an
# unfamiliar app demands. So this actor was pretrained once, on a corpus of its own on *training
# phones only*, by `make pretrain` (`guimem.pipeline.pretrain`, about 35 minutes on 2 cores),
# and its weights are committed in `pretrained/actor/` with a model card. `dvc repro` never
# trains it: on every machine the later stages play the same weights.
#
# **Reads** `pretrained/actor/` (the actor: `config.json`, `model.safetensors`, `vocab.json`, and its
# model card `pretraining.json`), `data/world/{train,test}/` and `data/retrieval_eval/` (the experience
# each memory retrieved at every held-out step). **Writes** its headline numbers to
# `metrics/actor.json`, every score behind them to `results/actor.json`, the pretraining curves (from
# the model card) to `plots/actor_training_curves.csv`, and
# `figures/actor_{training_curves,accuracy_by_condition,memory_effect,modality_contest}.png`.
#
# **Running it yourself.** `dvc repro` runs this notebook with the paths above. Opened in
# JupyterLab (`make lab`), it reads the pipeline's `data/` and its defaults below write under
# `scratch/`, so trying a parameter here never touches the pipeline's outputs. Saving the notebook
# keeps only your edits to its cells (`git checkout notebooks/04_actor.py` undoes them).
#
# **Paper.** The frozen actor of the SMG paper's main table and of SwitchMem — here a 6-layer
# miniature, pretrained by this project (the papers' actors come pretrained from elsewhere).

# %% tags=["parameters"]
world_dir = "data/world"  # episode stores from 00_world (train/: the training phones' tasks, for the floor; test/ to score on)
retrieval_dir = "data/retrieval_eval"  # what each memory retrieved at every test step, from 03_retrieval_eval
actor_dir = "pretrained/actor"  # the frozen miniature and its model card (made by `make pretrain`, committed; the pipeline: actor.actor_dir)
seed = 0  # the sample of held-out steps and the shuffled-image control
max_eval_steps = 0  # held-out test steps scored per condition (a fixed random sample; 0: all)
torch_threads = 1  # CPU threads for the actor (results are reproducible for a fixed count)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
plots_dir = "scratch/plots"  # the data behind the pretraining curves, CSV (the pipeline: plots, read by dvc.yaml's plots)
metrics_path = "scratch/metrics/actor.json"  # headline numbers (the pipeline: metrics/actor.json)
results_path = "scratch/results/actor.json"  # every score behind them (the pipeline: results/actor.json)

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from guimem.actors.mini.policy import CARD_JSON, CARD_README, MiniActor
from guimem.actors.mini.train import STRICT_MATCH, majority_action
from guimem.core.io import read_json
from guimem.core.policy import MODALITIES
from guimem.core.store import load_episodes
from guimem.eval.closed_loop import replay_world_config
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.smg.memories import MEMORIES, count_tokens
from guimem.train.examples import examples_from_retrieval, memory_names_target, sample_held_out, target_of
from guimem.viz.plotting import MEMORY_LABELS, figure_path, save_figure, write_plot_data

# %% [markdown]
# ## The frozen actor and how it was made
#
# The model card beside the weights says how they were made: the command, the commit, the
# pretraining seed, the corpus (training phones, never an evaluation phone; tasks drawn from the
# training parameter combinations, so no held-out task of any world seed), the machine and the
# time, and its accuracy on the tasks pretraining kept out of learning.

# %%
enter_repo_root()
torch.manual_seed(seed)
torch.set_num_threads(torch_threads)
actor = MiniActor.load(actor_dir)
card = read_json(Path(actor_dir) / CARD_JSON)
shape = actor.config
n_params = sum(p.numel() for p in actor.model.parameters())
print((Path(actor_dir) / CARD_README).read_text())


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
# all of its label's words occur in the goal and in the memory text shown. A small transformer
# trained from scratch on some ten thousand steps does not learn to align words across the prompt;
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
# reading the picture. So each training and validation step of pretraining (a share `pretrain.training.novel_glyphs`) is
# shown with its bare icons redrawn in fresh designs, and the memory crops that showed them redrawn
# alike (`guimem.actors.mini.augment`; the back arrow and the other icons every phone draws the
# same are kept). The held-out steps are shown as they are.
#
# Every head reads the final `[ACT]` token: the action type, a **pointer over the elements** (a
# touch lands on the chosen element's centre, and is still scored by the AITW rules on its
# coordinates), a swipe direction, a span of the goal to type, and the app to open.


# %% [markdown]
# ## Held-out examples: the experience retrieved at every test step
#
# Each held-out step (on the evaluation phone, whose glyph designs and words pretraining never
# showed) reads the experience `03_retrieval_eval` retrieved for it from the memories of
# `02_graph_build` — past experience of other tasks on that phone, as the later stages will see
# it. A fixed random sample of `max_eval_steps` steps is scored under every condition: memory
# kind x modality (none, text, image, both).

# %%
train_root, test_root = Path(world_dir) / "train", Path(world_dir) / "test"
train = load_episodes(train_root, verify_images=False)  # validated by 00_world
test = load_episodes(test_root, verify_images=False)
held = sample_held_out(examples_from_retrieval(test, test_root, retrieval_dir, MEMORIES, shape.max_history),
                       max_eval_steps, seed)
steps = sorted({(ex.episode_id, ex.step) for ex in held})
print(f"{len(steps)} held-out steps x {len(MEMORIES)} memories = {len(held)} examples")
memory_cut = {kind: float(np.mean([count_tokens(ex.input.memory_text) > shape.max_memory_tokens
                                   for ex in held if ex.memory_kind == kind])) for kind in MEMORIES}
print("share of memory blocks longer than the actor's budget (cut):", {k: f"{v:.1%}" for k, v in memory_cut.items()})


# %% [markdown]
# ## Pretraining, as the model card records it
#
# Behaviour cloning on the expert's action at every state of the corpus's demonstrations (each
# step shown experience from memories of its own phone's *other* tasks, in a modality drawn anew
# every epoch), then rounds of DAgger: the actor plays training tasks itself, the expert labels
# every state it visits, and it trains on. The weights kept are those of the best epoch on the
# validation tasks (whole tasks kept out of learning); a DAgger round is undone when it is
# significantly worse there than the weights it started from.

# %%
history = card["history"]
bc_epochs = history["behaviour_cloning_epochs"]
fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
ep = np.arange(1, len(history["train_loss"]) + 1)
a.plot(ep, history["train_loss"], "o-", color="#333333")
a.set(xlabel="epoch", ylabel="training loss (sum of heads)", title="Pretraining loss")
for ax in (a, b):
    if bc_epochs < len(ep):
        ax.axvline(bc_epochs + 0.5, color="#bbbbbb", lw=1, ls=":")  # DAgger from here on
b.plot(ep, history["validation_step_accuracy"], "^-", color="#333333", label="validation step accuracy (selects)")
b.set(xlabel="epoch", ylabel="share of steps", ylim=(0, 1), title="Validation (training phones, modality drawn)")
b.legend()
save_figure(fig, figure_path(figures_dir, "actor", "training_curves"))
write_plot_data(plots_dir, "actor", "training_curves", [
    {"epoch": int(e), "train_loss": loss, "validation_step_accuracy": val}
    for e, loss, val in zip(ep, history["train_loss"], history["validation_step_accuracy"])])


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
demonstrated = [target_of(step) for e in train for step in e.steps]  # the training phones' expert actions
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

# %% [markdown]
# ## Competence without experience
#
# What the frozen actor does with no memory, by three rules side by side: **element-exact** (a
# touch on the element the expert touched, the exact text), the **AITW** rule the step scores above
# use (a touch in the same enlarged box or within 0.14 of the point), and **LearnGUI**'s (a touch
# within 14% of the screen's width). Steps of clean demonstrations that the goal and the screen
# determine are where a competent actor needs no experience; the noisy demonstrations' steps
# (recoveries from a slip, a wander, a wrong final state) are reported apart.

# %%
from guimem.eval.action_match import ELEMENT_EXACT, MatchConfig

rules = {"element": ELEMENT_EXACT, "aitw": STRICT_MATCH,
         "learngui": MatchConfig(variant="learngui", screen_size_px=(world.image_width, 2 * world.image_width))}
without = {name: step_table(actor, smg_examples, ["none"], rule)["none"] for name, rule in rules.items()}
competence = {}
for split, mask in {"clean, determined by goal and screen": determined, "clean": is_clean,
                    "noisy episodes": ~is_clean}.items():
    competence[split] = {"steps": int(mask.sum()),
                         **{name: round(float(h.step[mask].mean()), 4) if mask.any() else None for name, h in without.items()},
                         "type": round(float(without["element"].type[mask].mean()), 4) if mask.any() else None}
    print(f"{split:38s}{competence[split]['steps']:5d} steps: " + ", ".join(
        f"{k} {v}" for k, v in competence[split].items() if k != "steps"))

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
# distract, and a small actor can be distracted by a long block that says
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
    "actor": {"folder": actor_dir, "parameters": n_params, "layers": shape.num_hidden_layers, "d_model": shape.hidden_size,
              "pretraining": {k: card[k] for k in ("seed", "commit", "corpus", "validation", "machine", "seconds")}},
    "held_out_steps": len(steps), "memory_text_cut_share": memory_cut, "competence_none": competence,
    "modality_contest": modality, "by_information_clean": by_information, "reading": reading,
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
headline = ["none", "smg/text", "smg/image"]  # the rest (smg/both, the baseline memories'): results["step_accuracy"]
metrics = {"majority_step_accuracy": results["majority_action"]["step_accuracy"],
           "element_accuracy_none_determined": competence["clean, determined by goal and screen"]["element"],
           "type_accuracy_none_determined": competence["clean, determined by goal and screen"]["type"]}
metrics |= {f"step_accuracy_{c.replace('/', '_')}": results["step_accuracy"][c] for c in headline}
metrics |= {"smg_text_image_non_tied": round(o["non_tied_share"], 4), "smg_text_image_oracle_gain": round(o["oracle_gain"], 4)}
metrics |= {k: round(reading[k], 4) for k in ("image_vs_none_agreement", "shuffled_image_drop",
                                              "label_free_image_minus_text", "synonym_text_minus_image")}
report(results_path, results, metrics_path, metrics)

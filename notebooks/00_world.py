# %% [markdown]
# # 00 · The world: a miniature phone, its tasks, and the demonstrations memory is built from
#
# **What this stage does.** It generates every trajectory the later stages learn from and
# remember: a built-in synthetic Android-like phone (a launcher and six apps drawn to PNG,
# each screen with an accessibility tree, each app in several **variants**), an expert that
# knows the right next action from any state, a demonstrator that is that expert plus noise —
# sometimes clumsy, sometimes failing — and three episode stores: training, test and memory.
#
# **Why.** The Subgoal-aware Memory Graph (SMG) and SwitchMem papers evaluate on AITW,
# LearnGUI, AndroidWorld and SPA-Bench, which need emulators, GPUs and large downloads. This
# world keeps what makes memory matter in those benchmarks and runs on a laptop. Its premise
# is SPA-Bench's: single-app tasks, solved by an agent that has never seen *this* variant of
# the app. The same app differs between phone makers and versions — where a function sits,
# what it is called, which controls are bare icons — so the actor learns on some variants and
# is tested on another, with a memory of past experience of *other* tasks on that same phone.
# The world also has label-free icons and dense picture grids, list orders and colours that
# change between episodes while labels stay, interrupting popups and dead ends. Later
# notebooks *measure* whether each memory exploits these; nothing here assumes it.
#
# **Reads** nothing (the world is code). **Writes** `data/world/train/`, `data/world/test/` and
# `data/world/memory/` (episode stores: `episodes/<id>.json`, `screens/<sha>.png`,
# `manifest.json`), its headline numbers to `metrics/world.json`, every count behind them to
# `results/world.json`, and four figures: `figures/world_gallery.png`,
# `figures/world_variants.png`, `figures/world_filmstrip.png`, `figures/world_summary.png`.
#
# **Running it yourself.** `dvc repro` runs this notebook with the paths above. Opened in
# JupyterLab (`make lab`), its defaults below write everything under `scratch/` instead, so
# trying a parameter here never touches the pipeline's outputs (`dvc status` stays clean); the
# later notebooks keep reading `data/`. Saving the notebook keeps only your edits to its cells
# (`git checkout notebooks/00_world.py` undoes them).
#
# **Paper.** The stand-in for the trajectory data of the SMG paper (§4, SPA-Bench / AITW-style
# trajectories with subgoals) and the environment of its closed-loop table.

# %% tags=["parameters"]
seed = 0  # master seed: tasks, phone content, shuffles, popups and demonstrator noise all derive from it
phone = {}  # the world and its demonstrator: fields of WorldConfig (guimem.phone.config); unset: its defaults
n_perturbed = 300  # tasks the expert is knocked off course on, to measure that it still completes them
out_dir = "scratch/world"  # where the train/, test/ and memory/ episode stores are written (the pipeline: data/world)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
metrics_path = "scratch/metrics/world.json"  # headline numbers (the pipeline: metrics/world.json)
results_path = "scratch/results/world.json"  # every count behind them (the pipeline: results/world.json)

# %%
import json
import random
from pathlib import Path

from guimem.core.data import Action
from guimem.core.store import SPLITS, load_episodes, load_screenshot
from guimem.phone import render
from guimem.phone.catalogue import LOGICAL_SIZE
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import generate_dataset, plan_tasks, run_episode
from guimem.phone.expert import Expert, perturbed_completion
from guimem.phone.tasks import TEMPLATES, make_task, subgoal_reuse
from guimem.phone.variants import app_variant
from guimem.phone.world import World
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.viz.plotting import figure_path, save_figure

enter_repo_root()
config = WorldConfig.from_dict(phone)  # world.phone's fields over WorldConfig's defaults

# %% [markdown]
# ## A screen
# A **screen** is two things at once: a picture (what a vision model sees) and an
# accessibility tree of UI elements, each with a role, a visible text, a content
# description, normalised bounds `(x0, y0, x1, y1)` and whether it is clickable (what a
# text-only agent reads). An episode starts inside its task's app (`phone = {"start": "launcher"}`
# starts on the home screen instead). Below, the Notes app as an episode starts, in its reference
# design (variant 0), with every element's box drawn: the toolbar icons (red boxes) carry **no
# text and no description** — only their picture says that one is a magnifier and the other a
# ⋮ menu.

# %%
world = World(WorldConfig(**{**config.to_dict(), "dialog_prob": 0.0}))  # no popup over the screen we look at
dark_mode = make_task("notes.display", (("option", "Dark mode"), ("state", "on")))
obs = world.reset(dark_mode, seed=seed, variant=0)
print(obs.screen, "—", len(obs.elements), "elements")
for e in obs.elements[:6]:
    print(f"  {e.role:10s} text={e.text!r:18s} description={e.description!r:10s} clickable={e.clickable} bounds={e.bounds}")
render.annotate(obs.image, obs.elements).resize((270, 540))

# %% [markdown]
# Actions are the AITW-like set `tap, long_press, swipe, type, back, home, enter, open_app,
# done, impossible`, with points normalised to [0, 1]. A tap hits the topmost clickable
# element under it (a dialog blocks what lies beneath), a vertical swipe scrolls the list,
# `type` fills the focused field. The tree names the two icons only `icon0` and `icon1`, and
# their order is the app variant's own; below we peek at the world's hidden layout to find the
# ⋮ — an agent has to recognise its three dots. It opens a menu of words.

# %%
x0, y0, x1, y1 = world.layout.find("icon:more").box  # hidden from agents: the world's own widget
obs, done, info = world.step(Action("tap", point=((x0 + x1) / 2 / LOGICAL_SIZE[0], (y0 + y1) / 2 / LOGICAL_SIZE[1])))
print(info["effect"], "->", obs.screen, [e.text for e in obs.elements if e.role == "menu_item"])

# %% [markdown]
# ## App variants: the same app from another phone maker
# Every app exists in several **variants** (`variants`, here 8), as the same app differs
# between phone makers and versions. Variant 0 is the reference design above; each other one
# is drawn once and for all from the app's name, its index and whether it is a training or an
# evaluation variant (`guimem.phone.variants`):
# - **words**: some labels take a synonym ("Preferences" may read "Options", "Dark mode"
#   "Night mode", "Trash" "Bin") — the goal keeps the plain words. Each label's last synonym is
#   kept for the evaluation variants: a word no training phone shows;
# - **glyph designs**: each toolbar function (search, add, favourite, delete, ...) is drawn in the
#   variant's own design, or (on a training variant) in the familiar one. The designs of training
#   and evaluation variants are disjoint, so what a new glyph does is known only from a picture
#   of having used it;
# - **labelled or bare icons**: on a training variant each toolbar glyph carries an accessibility
#   label ("Search") or stays a bare picture; evaluation variants label none;
# - **where a function sits**: the settings open from the ⋮ menu or from a gear in the top
#   bar, and some switches sit on another settings page;
# - **order**: menus, tabs and dialog buttons have the variant's own order. Icon toolbars (and
#   the side of the round add button), lists and switches are reordered in every episode, while
#   the labels and glyphs stay: "the bare icon at top right" does not carry over, the glyph does.
#
# The actor learns on `train_variants` and is tested on the others: there, only experience
# tells where a function is, what it is called and what a bare icon does. Here is what each
# variant of Notes changes.

# %%
for v in range(config.variants):
    d = app_variant("notes", v, v in config.eval_variants).to_dict()
    print(f"variant {v} ({'evaluation' if v in config.eval_variants else 'training'}): settings from the "
          f"{d['settings_entry']}; labelled glyphs {d['labelled'] or 'none'}; own designs "
          f"{sorted(d['designs']) or 'none'}; moved switches {d['moved'] or 'none'}\n    words {d['words'] or 'the reference words'}")

# %% [markdown]
# The same task in every variant, "Turn on Dark mode in Notes": the app as it opens (top row)
# and the page that holds the switch (bottom row), reached by the expert (below), whose route
# follows each variant's own menus.

# %%
frames, captions, rng = [], [], random.Random(seed)
for row in ("start", "switch"):
    for v in range(config.variants):
        obs = world.reset(dark_mode, seed=seed, variant=v)
        expert = Expert(world)
        while row == "switch" and expert.decide(world).subgoal == 0:  # play the "go to the switch" subgoal
            obs = world.step(expert.act(world, rng)[0])[0]
        frames.append(render.annotate(obs.image, obs.elements))
        captions.append(f"variant {v}: {obs.screen}")
fig = render.contact_sheet(frames, captions, cols=config.variants, title="'Turn on Dark mode in Notes' in each variant of Notes")
save_figure(fig, figure_path(figures_dir, "world", "variants"))

# %% [markdown]
# ## A task, and the subgoals it is made of
# A **task** is a template with parameters, e.g. "Turn {state} {option} in Notes". Every
# template is a sequence of **subgoals** — contiguous actions with one sub-intent, usually
# several ("write the message and send it": tap the field, type, tap send) — drawn from *one
# shared library*, so the same kinds of subgoal recur across tasks and apps. A plan says what
# to reach, not how: "go to the Dark mode switch" is one subgoal whose route — ⋮ › Preferences ›
# Display in one variant, the gear › Display in another — is found on the phone itself.

# %%
for tid in ("notes.display", "messages.appearance", "gallery.settings"):
    t = TEMPLATES[tid]
    params = {"option": "Dark mode", "state": "on"}
    print(f"{t.goal.format(**params)!r}")
    for sg in t.full_plan(params, config.start):
        print(f"    {sg.type:20s} {sg.text}")
reuse = subgoal_reuse()
print(f"\n{len(TEMPLATES)} templates, {reuse['types_used']} subgoal types; "
      f"{reuse['types_shared']} of them ({reuse['share']:.0%}) are used by two or more templates")

# %% [markdown]
# ## The expert, from any state
# The **expert** knows each task's plan and may look at the phone's hidden state (an agent
# may not). Built when an episode starts, it plays the plan once on a copy of the phone and
# keeps the trace: each move and the place it was made from. From any state it then dismisses
# a popup, answers `done` once the task's check holds, continues the trace where it was made
# from this very place, and otherwise goes back towards where the trace starts. Its routes on
# each variant:

# %%
for v in range(config.variants):
    world.reset(dark_mode, seed=seed, variant=v)
    print(f"variant {v}:", " › ".join(e.move[1] or e.move[0] for e in Expert(world).trace))

# %% [markdown]
# It must be right from *any* state, not only from the states its own clean run passes
# through: the DAgger teacher of pretraining (`make pretrain`) relabels the actor's own detours with it.
# Measured here on tasks of the test and memory splits: let the expert make some of its moves,
# knock it off course with 1–5 random actions (any control tapped or long-pressed, scrolls,
# typing, enter, back), and let it play on.

# %%
jobs = plan_tasks(config, seed)
jobs = (jobs["test"] + jobs["memory"])[:n_perturbed]
perturbed = perturbed_completion(World(config, render=False), jobs, seed)
print(f"completed {perturbed['completion_rate']:.1%} of {perturbed['tasks']} perturbed tasks; "
      f"failures by template: {perturbed['failures'] or 'none'}")

# %% [markdown]
# ## An episode
# The **demonstrator** is the expert with noise on top. It is deliberately imperfect: it
# sometimes taps the wrong control (and the expert goes back from where it strayed), gives up
# (`impossible`, or wanders until the step budget runs out), or finishes in a wrong state (a
# sibling option, another item, a mistyped text) and says `done`. Every step records the
# ground-truth subgoal it belongs to — noise steps included — and success is judged on the
# phone's hidden final state, never on pixels. An interrupting popup gets a subgoal of its own.

# %%
demo_world = World(WorldConfig(**{**config.to_dict(), "dialog_prob": 1.0}))
episode = run_episode(demo_world, make_task("messages.sticker", (("name", "Bob"), ("sticker", "heart"))), seed=seed + 3,
                      episode_id="demo", images=None, variant=config.eval_variants[0])
print(episode.goal, "->", "success" if episode.success else "failure")
for i, step in enumerate(episode.steps):
    print(f"  {i:2d} [{step.subgoal.index}] {step.subgoal.type:18s} {step.action.describe():28s} on {step.observation.screen}")

# %% [markdown]
# ## The dataset
# Three stores, the split the papers' setting asks for:
# - **train**: episodes on the train variants, balanced over the seen templates — what the
#   actor learns from;
# - **test**: episodes on the evaluation variants — parameter combinations never used in
#   training (a fixed hash split per template) and whole **unseen templates** composed of
#   subgoal types that training does contain;
# - **memory**: past experience on the evaluation variants, successes and failures, of every
#   template — but never a test episode's own task on its own variant. The memories of
#   `02_graph_build` are built from it: the agent meets an unfamiliar variant with a memory of
#   *other* tasks done on it.

# %%
stats = generate_dataset(config, out_dir, seed=seed)
print(json.dumps({k: stats[k] for k in ("episodes", "steps", "success_rate", "subgoal_reuse_share")}, indent=1))
for split in SPLITS:
    s = stats[split]
    print(f"{split:6s} variants {s['variants']}  {s['actions_per_subgoal']:.2f} actions per subgoal "
          f"({s['actions_per_subgoal_without_end']:.2f} without the final done)  modes {json.dumps(s['modes'])}")

# %% [markdown]
# Every episode is a JSON file; every distinct screen is stored once, named by its content
# hash, and validated on load (a missing or truncated PNG, a NaN coordinate or an unknown
# action type is an error naming the file and the field).

# %%
train = load_episodes(Path(out_dir) / "train")
test = load_episodes(Path(out_dir) / "test")
memory = load_episodes(Path(out_dir) / "memory")
print(len(train), "train,", len(test), "test and", len(memory), "memory episodes;", train[0].id, "starts with",
      train[0].steps[0].screenshot)

# %% [markdown]
# ## Figures
# **Gallery**: screens of every app with their UI bounds (red: label-free icons, orange:
# grid cells, green: fields, purple: toggles, blue: buttons, grey: the rest). Note the
# dense photo and sticker grids — nothing but pixels tells a beach from a bridge.

# %%
wanted = ["launcher/home", "settings/main", "notes/list", "notes/overflow", "messages/thread", "messages/stickers",
          "gallery/photos", "gallery/viewer", "shop/product", "shop/cart", "clock/alarms", "clock/new_alarm",
          "popup/rate", "popup/notifications", "notes/confirm_delete", "messages/settings"]
picked = render.pick_screens(train, wanted)
shots = [render.annotate(load_screenshot(Path(out_dir) / "train", obs.screenshot), obs.elements) for obs, _ in picked]
fig = render.contact_sheet(shots, [obs.screen for obs, _ in picked], cols=8, title="Screens and their UI trees")
save_figure(fig, figure_path(figures_dir, "world", "gallery"))

# %% [markdown]
# **Filmstrip**: one training episode, each frame with the action taken on it (a ring for
# a tap, an arrow for a swipe, a banner for keys) and the subgoal it belongs to.

# %%
strip = next((e for e in train if e.success and e.provenance["popups"] and 6 <= len(e.steps) <= 11), train[0])
frames = [render.annotate(load_screenshot(Path(out_dir) / "train", s.screenshot), (), s.action) for s in strip.steps]
frames.append(load_screenshot(Path(out_dir) / "train", strip.final.screenshot).convert("RGB"))
captions = [f"{i}: [{s.subgoal.index}] {s.subgoal.text}" for i, s in enumerate(strip.steps)] + ["final"]
fig = render.contact_sheet(frames, captions, cols=len(frames), title=f"{strip.id}: {strip.goal}")
save_figure(fig, figure_path(figures_dir, "world", "filmstrip"))

# %% [markdown]
# **Summary**: episodes and demonstrator success per app, episode lengths, and how often
# each subgoal type occurs.

# %%
fig = render.dataset_summary_figure({"train": train, "test": test, "memory": memory})
save_figure(fig, figure_path(figures_dir, "world", "summary"))

# %% [markdown]
# ## Metrics
# The headline numbers (`make metrics`; a few of them in `metrics/headline.json`, `dvc metrics show`), and every count and rate of the
# world behind them (`results/world.json`). `memory_test_goal_overlap` counts the test tasks
# (template and parameters) that a memory episode demonstrates word for word, on any variant:
# memory is meant to be experience of *other* tasks, and the planner keeps every test task out of
# it (0). `test_tasks_without_experience` is the share of test tasks whose expert path on their
# evaluation variant is the path on the reference design — the same moves on widgets that read
# and look the same (no synonym, no glyph of the variant's own design, no moved switch, no other
# route): tasks an actor trained on other variants can complete with no memory of this phone.

# %%
results = {
    "episodes": stats["episodes"], "steps": stats["steps"],
    "train_episodes": stats["train"]["episodes"], "test_episodes": stats["test"]["episodes"],
    "memory_episodes": stats["memory"]["episodes"],
    "demonstrator_success_rate": stats["success_rate"],
    "train_success_rate": stats["train"]["success_rate"], "test_success_rate": stats["test"]["success_rate"],
    "memory_success_rate": stats["memory"]["success_rate"],
    "success_in_range": all(stats[s]["success_in_range"] for s in SPLITS),
    "variants": config.variants, "train_variants": list(config.train_variants), "eval_variants": list(config.eval_variants),
    "actions_per_subgoal": {s: stats[s]["actions_per_subgoal"] for s in SPLITS},
    "actions_per_subgoal_without_end": {s: stats[s]["actions_per_subgoal_without_end"] for s in SPLITS},
    "expert_perturbed_completion": perturbed["completion_rate"], "expert_perturbed_tasks": perturbed["tasks"],
    "expert_perturbed_failures": perturbed["failures"],
    "mean_steps": round(stats["steps"] / max(1, stats["episodes"]), 3),
    "templates": stats["templates"], "unseen_templates": len(stats["unseen_templates"]),
    "subgoal_types": stats["subgoal_types"], "subgoal_reuse_share": stats["subgoal_reuse_share"],
    "screen_types_per_app": stats["screen_types_per_app"],
    "screenshots_per_app": stats["train"]["screenshots_per_app"],
    "unique_screenshots": sum(stats[s]["unique_screenshots"] for s in SPLITS),
    "episodes_with_popup": sum(stats[s]["episodes_with_popup"] for s in SPLITS),
    "demonstrator_modes": stats["train"]["modes"],
    "memory_test_goal_overlap": stats["memory_test_goal_overlap"],
    "test_tasks_without_experience": stats["test_tasks_without_experience"],
}

# %%
metrics = {k: results[k] for k in ("train_episodes", "test_episodes", "memory_episodes", "mean_steps",
                                   "demonstrator_success_rate", "unique_screenshots", "templates",
                                   "expert_perturbed_completion", "memory_test_goal_overlap",
                                   "test_tasks_without_experience")}
metrics["actions_per_subgoal"] = results["actions_per_subgoal"]["train"]
report(results_path, results, metrics_path, metrics)

# %% [markdown]
# # 00 · Recorded runs in place of the world: real trajectories as the pipeline's episode stores
#
# **What this stage does.** It imports recordings of a real agent — by default the three runs on
# Simple Calendar Pro bundled in `samples/android_world_simple_calendar/` (Apache-2.0; see its
# NOTICE) — into episode stores of the same kind `00_world` writes: `train/`, `test/` and
# `memory/`. On the way each screen without an accessibility tree gets the text elements OCR
# reads on it, each screen its type and each step its subgoal where a person labelled them
# (`screen_labels.json`, `subgoal_labels.json` beside the sample), and screens that differ from
# the one before only in the status bar are stored as that one.
#
# **Why.** Segmentation, graph build and retrieval evaluation read episode stores and nothing
# else of the world. With `base.episodes: recorded` in `params.yaml` they read these stores in
# place of the world's, unchanged: `dvc exp run -S base.episodes=recorded -S graph_build.pca_dim=0
# retrieval_eval` runs `00_recorded` → `01_segmentation` → `02_graph_build` → `03_retrieval_eval` on
# the recordings (a 64-dimensional screen projection needs at least 64 memory screens).
# The miniature actor is trained on the world and plays it, so `04_actor` refuses them; the
# SwitchMem stages (`05`–`09`) read them with a Hugging Face VLM as the actor, the closed loop
# skipped (README: SwitchMem on recorded steps).
#
# **Reads** the recordings at `source` (format `source_format`; screen types at `labels`,
# subgoals at `subgoal_labels`). **Writes** the import (`data/recorded/imported/`) and the three
# stores (`data/recorded/{train,test,memory}/`), headline numbers to `metrics/recorded.json`,
# every run's provenance to `results/recorded.json`, and `figures/recorded_runs.png`.
#
# **Running it yourself.** `dvc repro` runs it (the default reads the bundled sample: a few
# seconds, and about 20 s of OCR the first time); in JupyterLab it writes under `scratch/`. Point
# `source` at your own runs and `source_format` at their importer (`agent_run`, `aitw`,
# `learngui`, `jsonl`, or `store` for an episode store recorded from a phone; `python -m
# guimem.real import --help`).

# %% tags=["parameters"]
seed = 0  # seeds the draw of which run goes to which split
source = "samples/android_world_simple_calendar"  # the recordings: a folder of run folders, or a file
source_format = "agent_run"  # their importer (guimem.real.importers.IMPORTERS): agent_run, aitw, learngui, jsonl or store
labels = "samples/android_world_simple_calendar/screen_labels.json"  # screen types by run ("": none)
subgoal_labels = "samples/android_world_simple_calendar/subgoal_labels.json"  # subgoals by run, by hand ("": none)
ocr = True  # give screens recorded without a UI tree the text elements OCR reads on them
max_side = 0  # downscale screenshots to this many pixels on their longer side at import (0: keep)
split = [1.0, 1.0, 1.0]  # weights of train, test and memory: runs shared out in proportion, at least one each
executor = "local"  # where OCR runs: local (ocr_workers processes; 1: this one), ray (a local Ray) or ray:<address>
ocr_workers = 1  # workers reading screens (each loads PP-OCR once)
out_dir = "scratch/recorded"  # the import (imported/) and the three stores (the pipeline: data/recorded)
figures_dir = "scratch/figures"  # where the figure goes (the pipeline: figures)
metrics_path = "scratch/metrics/recorded.json"  # headline numbers (the pipeline: metrics/recorded.json)
results_path = "scratch/results/recorded.json"  # every number behind them

# %%
from pathlib import Path

from PIL import Image

from guimem.core.executor import ExecutorSpec, make_executor
from guimem.core.io import read_json
from guimem.core.store import SPLITS, load_screenshot
from guimem.phone import render
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.real.importers import IMPORTERS
from guimem.real.importers.common import goals_from_names
from guimem.real.splits import write_splits
from guimem.viz.plotting import figure_path, save_figure

# %% [markdown]
# ## The import
#
# The importer parses and checks every run before it writes anything (a bad line is an error
# naming the file and the field). What it had to decide for a run is in the run's provenance:
# where the goal came from (these recordings store none but their folder name), whether a screen
# was recorded after the last action (`recorded`; `repeated` when the last action — `done`,
# `answer` — leaves the screen as it is; `not recorded` after a tap whose outcome the recording
# lacks), and which screens only the status bar told from the one before.

# %%
enter_repo_root()
importer, takes = IMPORTERS[source_format]
options = {"ocr": ocr, "executor": make_executor(ExecutorSpec.parse(executor, ocr_workers)),
           **({"max_side": max_side} if max_side else {}),
           **({"labels": read_json(labels)} if labels else {}),
           **({"subgoal_labels": read_json(subgoal_labels)} if subgoal_labels else {})}
assert set(options) <= set(takes), f"{source_format} takes {takes}"
imported = Path(out_dir) / "imported"
episodes = importer(source, imported, **options)

# %%
for e in episodes:
    print(f"{e.id}: {len(e.steps)} steps, goal {e.goal!r} ({e.provenance.get('goal_source', 'recorded')}), "
          f"success {e.success}, final screen {e.provenance.get('final_screen', 'recorded')}, "
          f"same screen as before: {e.provenance.get('same_screen_as_before', [])}")
labelled_steps = sum(s.subgoal is not None for e in episodes for s in e.steps)
print(f"{len(episodes)} runs, {sum(len(e.steps) for e in episodes)} steps, {labelled_steps} with a subgoal label")
print(goals_from_names(episodes) or "every goal given")  # the sample's folder names are all its recordings say

# %% [markdown]
# ## Train, test and memory
#
# The runs are shared out by `split` (weights of train, test and memory), which run goes where
# drawn with `seed`. With the three bundled runs that is one run each: enough to run every stage,
# far too few for their numbers to mean much. The stores are what `base.episodes: recorded` hands
# to `01`-`03`.

# %%
stores = write_splits(imported, out_dir, split, seed)
for name in SPLITS:
    print(f"{name:6s} {len(stores[name])} runs: {[e.id for e in stores[name]]}")

# %% [markdown]
# ## The runs
# Every step of every run, the action drawn on its screen (a ring for a tap, an arrow for a
# swipe, a banner for the rest), captioned with its split and its subgoal where one is labelled.

# %%
cols = max(len(e.steps) for e in episodes)
frames, captions = [], []
for name in SPLITS:
    for e in stores[name]:
        store = Path(out_dir) / name
        for i in range(cols):
            if i < len(e.steps):
                s = e.steps[i]
                frames.append(render.annotate(load_screenshot(store, s.screenshot), (), s.action))
                label = f" [{s.subgoal.type}]" if s.subgoal is not None else ""
                captions.append(f"{name} {i}: {s.action.describe()}{label}")
            else:
                frames.append(Image.new("RGB", (4, 8), "white"))
                captions.append("")
fig = render.contact_sheet(frames, captions, cols=cols, title="The recorded runs, by split")
save_figure(fig, figure_path(figures_dir, "recorded", "runs"))

# %% [markdown]
# ## Metrics

# %%
distinct = {o.screenshot: o for e in episodes for o in e.recorded_observations}  # each stored screen once
screens, elements = set(distinct), [len(o.elements) for o in distinct.values()]
report(results_path, {
    "runs": [{"id": e.id, "steps": len(e.steps), "split": next(n for n in SPLITS if e.id in {x.id for x in stores[n]}),
              **dict(e.provenance)} for e in episodes],
    "splits": {n: [e.id for e in stores[n]] for n in SPLITS}}, metrics_path, {
    "runs": len(episodes), "steps": sum(len(e.steps) for e in episodes), "screens": len(screens),
    **{f"{n}_runs": len(stores[n]) for n in SPLITS},
    "final_screens_not_recorded": sum(not e.final_recorded for e in episodes),
    "same_screen_as_before": sum(len(e.provenance.get("same_screen_as_before", [])) for e in episodes),
    "elements_per_screen": round(sum(elements) / max(1, len(elements)), 2),
    "steps_with_subgoal_labels": labelled_steps,
})

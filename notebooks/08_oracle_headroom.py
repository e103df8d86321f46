# %% [markdown]
# # 08 · Oracle headroom: how much of what a perfect per-step choice would gain does SwitchMem get, and where does the image help?
#
# **What this stage does.** On the held-out steps of `06_layer_analysis`, with the routers of
# `07_probe_router` at their calibrated τ, it sets three numbers side by side for each memory and
# step rule: the **best fixed rendering** (text or image, whichever is better over all steps),
# **SwitchMem**, and the **per-step oracle** that shows each step the rendering that was right
# there. The oracle is an analysis reference only — it sees the answer — and it bounds what any
# router between the two renderings could reach. Then it asks *where* the image rendering helps:
# by how dense the screen is, by the kind of action (the app's interface, the task's status,
# system navigation), by the step's position in the episode and by whether the control to touch
# is a label-free icon or a labelled one — and whether SwitchMem sends those steps to Image.
#
# **Why.** SwitchMem's Fig. 3 and its analyses: the gap between the best fixed modality and the
# oracle is the room routing has; the groups say what the routing should have learned (the paper:
# Image helps more on dense layouts, on interface functionality, task status and system
# navigation, and after the first step).
#
# **Reads** `data/layer_analysis/held_out/` and `data/probe_router/`. **Writes** its headline numbers
# to `metrics/oracle_headroom.json`, every table to `results/oracle_headroom.json`, and
# `figures/oracle_headroom_{headroom,where_image_helps}.png`.
#
# **Running it yourself.** `dvc repro` runs it; in JupyterLab it reads the pipeline's `data/` and
# writes under `scratch/` (seconds).

# %% tags=["parameters"]
records_dir = "data/layer_analysis"  # step records from 06_layer_analysis
routers_dir = "data/probe_router"  # routers from 07_probe_router (one folder per memory)
memories = ["smg", "task_graph"]  # memories whose routing is analysed (each must have a router)
rule = "aitw"  # the step rule of the group analysis (the headroom is given under both)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
metrics_path = "scratch/metrics/oracle_headroom.json"  # headline numbers (the pipeline: metrics/oracle_headroom.json)
results_path = "scratch/results/oracle_headroom.json"  # every number behind them

# %%
from pathlib import Path

from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.routing.figures import headroom_figure, where_image_helps_figure
from guimem.routing.recipe import headroom_findings
from guimem.routing.records import StepRecords
from guimem.routing.route_scores import headroom, route_records, where_image_helps
from guimem.routing.router import Router
from guimem.viz.plotting import MEMORY_LABELS, figure_path, save_figure

# %%
enter_repo_root()
held_all = StepRecords.load(Path(records_dir) / "held_out")
routed = {}
for kind in memories:
    records, router = held_all.of_memory(kind), Router.load(Path(routers_dir) / kind)
    scores, image = route_records(router, records)
    routed[kind] = (records, image)
    print(f"{MEMORY_LABELS[kind]}: {len(records)} held-out steps, τ = {router.tau:+.4f}, "
          f"{100 * image.mean():.0f}% routed to Image")

# %% [markdown]
# ## Best fixed → SwitchMem → oracle (paper Fig. 3)

# %%
rows, table = {}, {}
for kind, (records, image) in routed.items():
    for r in records.rules:
        h = headroom(records, {"switchmem": image}, r)
        h["captured"] = ((h["switchmem"] - h["best_fixed_accuracy"]) / h["oracle_gain"]) if h["oracle_gain"] else None
        table[f"{kind}/{r}"] = h
        rows[f"{MEMORY_LABELS[kind]}, {r}"] = h
fig = headroom_figure(rows)
save_figure(fig, figure_path(figures_dir, "oracle_headroom", "headroom"))
for name, h in rows.items():
    print(f"{name}: best fixed ({h['best_fixed']}) {100 * h['best_fixed_accuracy']:.1f} → SwitchMem "
          f"{100 * h['switchmem']:.1f} → oracle {100 * h['oracle']:.1f}  (headroom {100 * h['oracle_gain']:.1f} points)")

# %% [markdown]
# ## Where the image helps
#
# Each bar is image minus text accuracy within a group of the same held-out steps (positive: the
# picture of the experience serves better there); beside it, the share of the group SwitchMem sends
# to Image. A router that learned the right thing leans to Image where the left bars are positive.

# %%
focus = "smg" if "smg" in routed else next(iter(routed))  # the memory the group analysis and the metrics follow
records, image = routed[focus]
groups = where_image_helps(records, image, rule)
fig = where_image_helps_figure(groups)
save_figure(fig, figure_path(figures_dir, "oracle_headroom", "where_image_helps"))
for axis, by in groups.items():
    print(axis + ":", ", ".join(f"{n} {100 * g['image_minus_text']:+.1f} pts (n={g['steps']}, "
                                f"{100 * g['image_share']:.0f}% to Image)" for n, g in by.items()))

# %% [markdown]
# ## What the numbers say
#
# Whether headroom exists (the oracle above the best fixed rendering), how much of it SwitchMem
# takes, and whether the paper's groups are where the image helps here.

# %%
main = table[f"{focus}/{rule}"]
cat = groups["action category"]
findings = headroom_findings(main, groups)
for k, v in findings.items():
    print(f"{k.replace('_', ' ')}: {'holds' if v else 'does not hold'}")

# %%
report(results_path, {"headroom": table, "where_image_helps": groups, "findings": findings, "rule": rule},
       metrics_path, {
    "best_fixed": round(main["best_fixed_accuracy"], 4), "switchmem": round(main["switchmem"], 4),
    "oracle": round(main["oracle"], 4), "oracle_gain": round(main["oracle_gain"], 4),
    "captured_share": None if main["captured"] is None else round(main["captured"], 4),
    "image_minus_text_first_step": round(groups["step position"]["first step"]["image_minus_text"], 4),
    "image_minus_text_later_step": round(groups["step position"]["later step"]["image_minus_text"], 4),
    **{f"image_minus_text_{short}": round(cat[c]["image_minus_text"], 4)
       for c, short in (("interface functionality", "interface"), ("task status", "status"),
                        ("system navigation", "navigation")) if c in cat},
})

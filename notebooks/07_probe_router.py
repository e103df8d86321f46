# %% [markdown]
# # 07 · Probe and router: SwitchMem's choice between text and image memory, learned from the actor's hidden states
#
# **What this stage does.** From the step records of `06_layer_analysis` it builds SwitchMem's
# router and scores it on the held-out steps:
#
# 1. **the probe** — standardise the final-layer shift `h_I − h_T`, PCA to `pca_dim`, logistic
#    regression on the sign of the sampled preference of the pool's non-tied steps;
# 2. **the shared scorer** `q(state, candidate)` — one MLP that scores each candidate rendering
#    against the actor's memory-free hidden state, trained so that `r = q_I − q_T` reproduces the
#    probe's continuous decision value on every pool step;
# 3. **the label-free threshold τ** — Image where `r ≥ τ`; τ is set on the held-out steps from the
#    router's *scores* alone (no action, reward, success or preference of theirs): the quantile that
#    keeps the image-use rate the router has on its own training pool (`guimem.routing.router`);
# 4. **Table 1** — no memory, text, image, both, SwitchMem and the per-step oracle, under the AITW and
#    the LearnGUI rules; against ratio-matched random routing at SwitchMem's rate, a sweep of rates,
#    a router trained on the binary preference directly, and a UI-density heuristic.
#
# At run time routing costs the memory-free forward pass (which also gives the state) plus the MLP
# on two embedding look-ups; only the chosen memory prompt is then run — never both.
#
# **Why.** This is SwitchMem's claim: a frozen actor's own hidden states tell, step by step, which
# rendering of the same experience it will act better with, and a router trained on them beats any
# fixed rendering and random routing at the same rate.
#
# **Reads** `data/layer_analysis/{held_out,pool}/`. **Writes** the routers to
# `data/probe_router/<memory>/` (`router.json`, `scorer.safetensors`), its headline numbers to
# `metrics/probe_router.json`, every table behind them to `results/probe_router.json`, the rate sweep
# to `plots/probe_router_rate_sweep.csv`, and `figures/probe_router_{table,rate_sweep}.png`.
#
# **Running it yourself.** `dvc repro` runs it with the paths above; opened in JupyterLab it reads the
# pipeline's `data/` and writes under `scratch/` (seconds).
#
# **Paper.** SwitchMem Table 1 (Qwen3.5-9B: AITW 41.92 none / 48.76 text / 49.30 image / 47.08 both /
# 51.42 SwitchMem; LearnGUI 23.49 / 35.64 / 37.44 / 26.92 / 38.13) and its ratio-matched random baseline.

# %% tags=["parameters"]
records_dir = "data/layer_analysis"  # step records from 06_layer_analysis
out_dir = "scratch/probe_router"  # routers go to <out_dir>/<memory> (the pipeline: data/probe_router)
seed = 0  # probe, scorer initialisation, random routing
memories = ["smg", "task_graph"]  # a router per memory whose top-1 retrieval is routed
rule = "aitw"  # the step rule whose preference the probe learns (both rules are scored)
pca_dim = 64  # the probe: standardise -> PCA to this many dimensions -> logistic regression
probe_c = 1.0  # the logistic regression's inverse L2 strength
state_layer = -1  # which layer's memory-free hidden state is the router's state (-1: the last)
router_hidden = 64  # the shared scorer's MLP width
router_epochs = 200  # full-batch training passes
router_lr = 0.003  # AdamW learning rate
sweep_rates = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]  # image-use rates of the random-routing comparison
torch_threads = 1  # CPU threads (results are reproducible for a fixed count)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
plots_dir = "scratch/plots"  # the data behind the rate sweep (the pipeline: plots)
metrics_path = "scratch/metrics/probe_router.json"  # headline numbers (the pipeline: metrics/probe_router.json)
results_path = "scratch/results/probe_router.json"  # every number behind them

# %%
import json
from pathlib import Path

import numpy as np
import torch

from guimem.core.data import DataError
from guimem.core.io import write_metrics, write_stage_results
from guimem.pipeline.paths import enter_repo_root
from guimem.routing.figures import labelled_table_figure, rate_sweep_figure
from guimem.routing.probe import PreferenceProbe, cross_validated_decisions, fit_problem
from guimem.routing.records import StepRecords
from guimem.routing.route_scores import density_routing, label_free_tau, rate_sweep, table_one
from guimem.routing.router import RouterConfig, train_router
from guimem.viz.plotting import MEMORY_LABELS, figure_path, save_figure, write_plot_data

RULE_NAMES = {"aitw": "AITW", "learngui": "LearnGUI"}
TEACHER_FOLDS = 5  # folds (by episode) of the out-of-fold probe values the router learns on the probe's own steps
enter_repo_root()
torch.set_num_threads(torch_threads)
held_all = StepRecords.load(Path(records_dir) / "held_out")
pool_all = StepRecords.load(Path(records_dir) / "pool")
for kind in memories:
    if not len(held_all.of_memory(kind)) or not len(pool_all.of_memory(kind)):
        raise DataError("memories", f"no step records of {kind!r}: run 06_layer_analysis with it in its memories",
                        records_dir)
if not -held_all.n_layers - 1 <= state_layer <= held_all.n_layers:
    raise DataError("state_layer", f"the actor has layers 0..{held_all.n_layers}, got {state_layer}", records_dir)
print(f"{len(held_all)} held-out and {len(pool_all)} pool records; {held_all.n_layers} layers, d {held_all.d_model}")

# %% [markdown]
# ## The probe, then the router that imitates it
#
# The probe sees `h_I − h_T`, which needs both memory prompts run; it is the *teacher*. Its decision
# value on every pool step (tied steps included: the probe still has an opinion there; on the
# non-tied steps it was fitted on, the out-of-fold value of a probe that did not see the step's
# episode, so the router does not learn the probe's overfit) is the target of the router, which sees only what is available before either memory prompt runs: the
# memory-free hidden state and the actor's embedding of each candidate. The baseline router
# `binary` is the same MLP trained on the non-tied steps' binary preference directly, without
# the probe: does the actor-derived continuous target help?

# %%
def routers_for(kind):
    pool = pool_all.of_memory(kind)
    decided = pool.non_tied(rule)
    if (why := fit_problem(decided.preference(rule) > 0, decided.episodes)) is not None:
        raise DataError("n_samples", f"{MEMORY_LABELS[kind]}: no probe can be fitted on the pool: {why}; draw more "
                                     "actions per step (layer_analysis.n_samples), at a higher temperature, or "
                                     "from a larger pool", records_dir)
    preferred = decided.preference(rule) > 0
    probe = PreferenceProbe(pca_dim, probe_c, seed).fit(decided.shift(-1), preferred)
    teacher = probe.decision_function(pool.shift(-1))  # tied steps: the probe never saw them
    non_tied = pool.preference(rule) != 0  # the steps it was fitted on get out-of-fold values instead
    teacher[non_tied] = cross_validated_decisions(decided.shift(-1), preferred, decided.episodes, TEACHER_FOLDS,
                                                  pca_dim, probe_c, seed)
    state = lambda rec: rec.hidden["none"][:, state_layer]
    base = dict(hidden=router_hidden, epochs=router_epochs, lr=router_lr, seed=seed)
    switchmem = train_router(state(pool), pool.candidates["text"], pool.candidates["image"], teacher,
                             RouterConfig(**base, target="probe"))
    binary = train_router(state(decided), decided.candidates["text"], decided.candidates["image"],
                          (decided.preference(rule) > 0).astype(float), RouterConfig(**base, target="binary"))
    for router in (switchmem, binary):
        router.info["state_layer"] = state_layer  # what 08 and 09 read the state from
    return probe, teacher, switchmem, binary, state


routers, tables, sweeps = {}, {}, {}
for kind in memories:
    probe, teacher, switchmem, binary, state = routers_for(kind)
    held = held_all.of_memory(kind)
    scores = {name: r.score(state(held), held.candidates["text"], held.candidates["image"])
              for name, r in (("switchmem", switchmem), ("binary", binary))}
    for r in (switchmem, binary):
        r.tau = label_free_tau(r, held)  # the held-out steps' scores only
    routings = {"switchmem": switchmem.route(scores["switchmem"]), "binary": binary.route(scores["binary"])}
    routings["density"] = density_routing(held, float(routings["switchmem"].mean()), seed)
    tables[kind] = table_one(held, routings, ("aitw", "learngui"), seed=seed)
    sweeps[kind] = {"SwitchMem router": rate_sweep(scores["switchmem"], held, sweep_rates, rule, seed),
                    "binary-target router": rate_sweep(scores["binary"], held, sweep_rates, rule, seed),
                    "UI density": rate_sweep(np.array([r["n_elements"] for r in held.rows], float), held,
                                             sweep_rates, rule, seed)}
    routers[kind] = {"switchmem": switchmem, "binary": binary, "probe_explained_variance": probe.explained_variance,
                     "teacher_positive_share": float((teacher > 0).mean())}
    switchmem.save(Path(out_dir) / kind)
    print(f"{MEMORY_LABELS[kind]}: probe on {len(pool_all.of_memory(kind).non_tied(rule))} non-tied pool steps; "
          f"router image rate on its pool {switchmem.train_image_rate:.2f}, τ on held-out {switchmem.tau:+.3f}")

# %% [markdown]
# ## Table 1: fixed renderings against SwitchMem, on held-out steps
#
# Every number is a step accuracy of the actor's greedy answer (the routed column picks, per step,
# the rendering the router chose). The memories that are not routed (Subgoal-Flat, Action-Graph)
# are shown with the same actor on the same steps, as the memory-augmentation baselines. *Random*
# sends the same number of steps to Image as SwitchMem, at random (its expected accuracy, and a 95%
# interval over draws). The sign test pairs SwitchMem with the better fixed rendering on the same steps.

# %%
baselines = {}
for kind in sorted({r["memory_kind"] for r in held_all.rows} - set(memories)):  # the same actor, not routed
    rec = held_all.of_memory(kind)
    baselines[kind] = {r: {c: float(rec.hits[r][c].mean()) for c in ("none", "text", "image", "both")}
                       for r in rec.rules}
columns = ["memory, step rule", "none", "text", "image", "both", "SwitchMem", "random", "binary", "density", "oracle"]
rows = []
fixed = lambda t: [f"{100 * t[c]:.1f}" for c in ("none", "text", "image", "both")]
for kind, by_rule in baselines.items():
    for r, t in by_rule.items():
        rows.append([f"{MEMORY_LABELS[kind]}, {RULE_NAMES[r]}", *fixed(t)] + ["—"] * 5)
for kind in memories:
    for r, t in tables[kind].items():
        rows.append([f"{MEMORY_LABELS[kind]}, {RULE_NAMES[r]}", *fixed(t)]
                    + [f"{100 * t['switchmem']:.1f} ({100 * t['switchmem_image_rate']:.0f}% img)",
                       f"{100 * t['random']:.1f}", f"{100 * t['binary']:.1f}", f"{100 * t['density']:.1f}",
                       f"{100 * t['oracle']:.1f}"])
fig = labelled_table_figure(columns, rows, "Step accuracy (%) on held-out steps, the same frozen actor")
save_figure(fig, figure_path(figures_dir, "probe_router", "table"))
for kind in memories:
    t = tables[kind][rule]
    vs = t["switchmem_vs_best_fixed"]
    print(f"{MEMORY_LABELS[kind]} ({rule}): SwitchMem {100 * t['switchmem']:.1f} vs best fixed ({vs['best_fixed']}) "
          f"{100 * t[vs['best_fixed']]:.1f}: +{vs['fixed']}/−{vs['broken']}, p = {vs['p_value']}; "
          f"vs random at the same rate {100 * t['random']:.1f}: p = {t['switchmem_vs_random_p']}")

# %% [markdown]
# ## Against random routing at every image-use rate
#
# Thresholding each router at the quantile of its own scores that gives a rate, the curve asks
# whether its *ranking* of steps beats random at every intermediate rate (the paper: yes, on
# LearnGUI). The end points are the fixed renderings.

# %%
smg_sweep = sweeps["smg"]
fig = rate_sweep_figure(smg_sweep, {"text": tables["smg"][rule]["text"], "image": tables["smg"][rule]["image"]},
                        f"Subgoal-Graph memory, {rule} rule: routers against random at every image-use rate")
save_figure(fig, figure_path(figures_dir, "probe_router", "rate_sweep"))
write_plot_data(plots_dir, "probe_router", "rate_sweep",
                [{"rate": a["rate"], "random": round(a["random"], 4), "switchmem": round(a["router"], 4),
                  "binary": round(b["router"], 4), "density": round(c["router"], 4)}
                 for a, b, c in zip(*smg_sweep.values())])
beats = {name: sum(r["gain"] > 0 for r in rows_) for name, rows_ in smg_sweep.items()}
print("rates (of", len(sweep_rates), ") where each beats random:", beats)

# %% [markdown]
# ## What the numbers say
#
# Each of SwitchMem's findings, stated as holding or not on this actor and world (the README gathers
# them across seeds): SwitchMem ≥ the best fixed rendering; SwitchMem > ratio-matched random;
# the actor-derived target beats the simpler ones (binary preference, UI density).

# %%
t = tables["smg"][rule]
best = t["switchmem_vs_best_fixed"]["best_fixed"]
findings = {
    "switchmem_at_least_best_fixed": bool(t["switchmem"] >= t[best]),
    "switchmem_above_random": bool(t["switchmem"] > t["random"]),
    "switchmem_above_binary_target": bool(t["switchmem"] > t["binary"]),
    "switchmem_above_density": bool(t["switchmem"] > t["density"]),
    "beats_random_at_every_rate": bool(beats["SwitchMem router"] == len(sweep_rates)),
}
for k, v in findings.items():
    print(f"{k.replace('_', ' ')}: {'holds' if v else 'does not hold'}")
write_stage_results(results_path, {
    "rule": rule, "tables": tables, "baselines": baselines, "sweeps": sweeps, "findings": findings,
    "routers": {k: {"switchmem": {"tau": v["switchmem"].tau, "train_image_rate": v["switchmem"].train_image_rate,
                                  **v["switchmem"].info},
                    "binary": {"tau": v["binary"].tau, "train_image_rate": v["binary"].train_image_rate,
                               **v["binary"].info},
                    "probe_explained_variance": v["probe_explained_variance"],
                    "teacher_positive_share": v["teacher_positive_share"]} for k, v in routers.items()}})
metrics = {
    "smg_none": round(t["none"], 4), "smg_text": round(t["text"], 4), "smg_image": round(t["image"], 4),
    "smg_both": round(t["both"], 4), "smg_switchmem": round(t["switchmem"], 4), "smg_random": round(t["random"], 4),
    "smg_oracle": round(t["oracle"], 4), "smg_switchmem_image_rate": round(t["switchmem_image_rate"], 4),
    "smg_switchmem_vs_best_p": t["switchmem_vs_best_fixed"]["p_value"],
    "smg_switchmem_vs_random_p": t["switchmem_vs_random_p"],
    "task_graph_switchmem": round(tables["task_graph"][rule]["switchmem"], 4) if "task_graph" in tables else None,
}
write_metrics(metrics_path, metrics)
print(json.dumps(metrics, indent=1))

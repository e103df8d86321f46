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
probe = {}  # the probe: standardise -> PCA to pca_dim dimensions -> logistic regression with inverse L2 strength c (ProbeConfig in guimem.routing.probe)
state_layer = -1  # which layer's memory-free hidden state is the router's state (-1: the last)
router = {}  # the shared scorer: MLP width hidden, full-batch epochs, AdamW lr and weight_decay (RouterConfig in guimem.routing.router)
sweep_rates = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]  # image-use rates of the random-routing comparison
torch_threads = 1  # CPU threads (results are reproducible for a fixed count)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
plots_dir = "scratch/plots"  # the data behind the rate sweep (the pipeline: plots)
metrics_path = "scratch/metrics/probe_router.json"  # headline numbers (the pipeline: metrics/probe_router.json)
results_path = "scratch/results/probe_router.json"  # every number behind them

# %%
from pathlib import Path

import torch

from guimem.core.data import DataError
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.routing.figures import rate_sweep_figure, table_one_figure
from guimem.routing.probe import ProbeConfig
from guimem.routing.recipe import fixed_baselines, score_routers, switchmem_findings, train_routers
from guimem.routing.records import StepRecords
from guimem.routing.router import RouterConfig
from guimem.viz.plotting import MEMORY_LABELS, figure_path, save_figure, write_plot_data

# %%
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
# the probe: does the actor-derived continuous target help? (`guimem.routing.recipe` holds the
# recipe: `train_routers`, then `score_routers` on the held-out steps.)

# %%
config, probe_config = RouterConfig(**router, seed=seed), ProbeConfig(**probe)
routers, tables, sweeps = {}, {}, {}
for kind in memories:
    routers[kind] = train_routers(pool_all, kind, rule, config, probe_config, state_layer, seed, where=records_dir)
    tables[kind], sweeps[kind] = score_routers(routers[kind], held_all.of_memory(kind), rule, sweep_rates, seed)
    routers[kind].switchmem.save(Path(out_dir) / kind)
    print(f"{MEMORY_LABELS[kind]}: probe on {len(pool_all.of_memory(kind).non_tied(rule))} non-tied pool steps; "
          f"router image rate on its pool {routers[kind].switchmem.train_image_rate:.2f}, "
          f"τ on held-out {routers[kind].switchmem.tau:+.3f}")

# %% [markdown]
# ## Table 1: fixed renderings against SwitchMem, on held-out steps
#
# Every number is a step accuracy of the actor's greedy answer (the routed column picks, per step,
# the rendering the router chose). The memories that are not routed (Subgoal-Flat, Action-Graph)
# are shown with the same actor on the same steps, as the memory-augmentation baselines. *Random*
# sends the same number of steps to Image as SwitchMem, at random (its expected accuracy, and a 95%
# interval over draws). The sign test pairs SwitchMem with the better fixed rendering on the same steps.

# %%
baselines = fixed_baselines(held_all, memories)  # the same actor, not routed
fig = table_one_figure(baselines, tables, "Step accuracy (%) on held-out steps, the same frozen actor")
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
findings = switchmem_findings(t, beats["SwitchMem router"], len(sweep_rates))
for k, v in findings.items():
    print(f"{k.replace('_', ' ')}: {'holds' if v else 'does not hold'}")

# %%
report(results_path, {"rule": rule, "tables": tables, "baselines": baselines, "sweeps": sweeps, "findings": findings,
                      "routers": {kind: r.summary() for kind, r in routers.items()}}, metrics_path, {
    "smg_none": round(t["none"], 4), "smg_text": round(t["text"], 4), "smg_image": round(t["image"], 4),
    "smg_both": round(t["both"], 4), "smg_switchmem": round(t["switchmem"], 4), "smg_random": round(t["random"], 4),
    "smg_oracle": round(t["oracle"], 4), "smg_switchmem_image_rate": round(t["switchmem_image_rate"], 4),
    "smg_switchmem_vs_best_p": t["switchmem_vs_best_fixed"]["p_value"],
    "smg_switchmem_vs_random_p": t["switchmem_vs_random_p"],
    "task_graph_switchmem": round(tables["task_graph"][rule]["switchmem"], 4) if "task_graph" in tables else None,
})

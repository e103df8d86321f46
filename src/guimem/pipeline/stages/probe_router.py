"""07_probe_router's parameters (params.yaml ``probe_router``): the probe (``probe``: ProbeConfig), the shared
scorer (``router``: RouterConfig), the rate sweep."""

from __future__ import annotations

from guimem.eval.action_match import VARIANTS
from guimem.pipeline.actor_params import check_probe_dim, state_layers
from guimem.pipeline.params import (
    LEARNING_RATE,
    MAX_LAYERS,
    PATH,
    PROBE,
    SEED,
    THREADS,
    Group,
    Items,
    Number,
    Params,
    Stage,
    Text,
    check_subset,
)
from guimem.routing.router import MAX_HIDDEN, RouterConfig
from guimem.smg.memories import MEMORIES

ROUTER = Group(RouterConfig, {"hidden": Number(integer=True, lo=1, hi=MAX_HIDDEN),
                              "epochs": Number(integer=True, lo=1, hi=10**6), "lr": LEARNING_RATE,
                              "weight_decay": Number(lo=0.0, hi=1.0)})


def _state_layer(p: Params) -> None:
    """The router's state layer is one the records hold: 0..n_layers, or -1..-(n_layers + 1) from the end."""
    layers = state_layers(p)
    if layers is not None and not -layers - 1 <= p["state_layer"] <= layers:
        raise p.error("state_layer", f"the actor has layers 0..{layers} (its config.json's num_hidden_layers: {layers}; "
                                     f"-1: the last), got {p['state_layer']}")


def _recorded_memories(p: Params) -> None:
    """A router per memory whose pool steps 06 recorded."""
    check_subset(p, "memories", "layer_analysis", "memories", "probe-pool records (06_layer_analysis)")


STAGE = Stage("07_probe_router", "probe_router", {
    "records_dir": PATH, "out_dir": PATH, "seed": SEED,
    "memories": Items(Text(MEMORIES), nonempty=True, unique=True), "rule": Text(VARIANTS),
    "probe": PROBE, "state_layer": Number(integer=True, lo=-MAX_LAYERS - 1, hi=MAX_LAYERS), "router": ROUTER,
    "sweep_rates": Items(Number(above=0.0, hi=1.0), nonempty=True, unique=True), "torch_threads": THREADS,
    "figures_dir": PATH, "plots_dir": PATH, "metrics_path": PATH, "results_path": PATH,
}, (_state_layer, check_probe_dim, _recorded_memories), reporting=("sweep_rates",))

"""00_world's parameters (params.yaml ``world``): the fields of ``WorldConfig``, the seed and the report's knob."""

from __future__ import annotations

import dataclasses

from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import unseen_types_covered
from guimem.pipeline.params import MAX_SIDE, PATH, POSITIVE, SEED, Params, Stage, config_fields

_WORLD_KEYS = tuple(f.name for f in dataclasses.fields(WorldConfig))


def _world(p: Params) -> None:
    """WorldConfig's own checks, the success range, and unseen templates made of seen subgoal types."""
    config = p.build({f"world.{k}": k for k in _WORLD_KEYS}, WorldConfig.from_dict, {k: p[k] for k in _WORLD_KEYS})
    if config.image_width > MAX_SIDE // 2:  # its height is twice its width
        raise p.error("image_width", f"must be at most {MAX_SIDE // 2} (the screenshot is twice as tall), "
                                     f"got {config.image_width}")
    if config.success_min > config.success_max:
        raise p.error("success_min", f"must be at most success_max ({config.success_max}), got {config.success_min}")
    if not unseen_types_covered(config):
        raise p.error("unseen_templates", "a template uses a subgoal type that no training template uses")


STAGE = Stage("00_world", "world", {
    "seed": SEED, **config_fields(WorldConfig), "n_perturbed": POSITIVE, "out_dir": PATH, "figures_dir": PATH,
    "metrics_path": PATH, "results_path": PATH,
}, (_world,), reporting=("n_perturbed",))

"""00_world's parameters (params.yaml ``world``): the world (``phone``: WorldConfig's fields), the seed
and the report's knob."""

from __future__ import annotations

from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import unseen_types_covered
from guimem.pipeline.params import MAX_SIDE, PATH, POSITIVE, SEED, Group, Params, Stage, config_fields

PHONE = Group(WorldConfig, config_fields(WorldConfig))


def _world(p: Params) -> None:
    """WorldConfig's own checks, the success range, and unseen templates made of seen subgoal types."""
    config = p.build({f"world.{k}": f"phone.{k}" for k in PHONE.fields}, WorldConfig.from_dict, p["phone"])
    if config.image_width > MAX_SIDE // 2:  # its height is twice its width
        raise p.error("phone.image_width", f"must be at most {MAX_SIDE // 2} (the screenshot is twice as tall), "
                                           f"got {config.image_width}")
    if config.success_min > config.success_max:
        raise p.error("phone.success_min", f"must be at most success_max ({config.success_max}), "
                                           f"got {config.success_min}")
    if not unseen_types_covered(config):
        raise p.error("phone.unseen_templates", "a template uses a subgoal type that no training template uses")


STAGE = Stage("00_world", "world", {
    "seed": SEED, "phone": PHONE, "n_perturbed": POSITIVE, "out_dir": PATH, "figures_dir": PATH,
    "metrics_path": PATH, "results_path": PATH,
}, (_world,), reporting=("n_perturbed",))

"""Synthetic-phone demonstrations for the closed-loop tests (and the executor's): six episodes of
distinct goals, noisy ones included, so that both outcomes occur."""

from __future__ import annotations

import random

from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import run_episode
from guimem.phone.tasks import TEMPLATES, sample_task
from guimem.phone.world import World


def make_demos():
    """Six demonstrations of distinct goals (noisy ones included), with their task and seed."""
    config = WorldConfig(dialog_prob=0.5, p_wrong_tap=0.2, p_give_up=0.3, p_wrong_state=0.2)
    world, rng, out, goals = World(config), random.Random(3), [], set()
    for seed, template in enumerate(sorted(TEMPLATES)[::5]):
        task = sample_task(template, rng)
        if task.goal in goals:
            continue
        goals.add(task.goal)
        out.append((task, seed, run_episode(world, task, seed, f"ep{seed}", None, config)))
    return config, out

"""Where the frozen actor first leaves the expert's path, without memory, on phones it knows and on the evaluation phone.

Plays every held-out task of the workspace's test store (``data/world/test``, run ``dvc repro`` first)
with the committed actor (``pretrained/actor``), no memory, once on its own phone (the evaluation
phone) and once on a training phone, and asks the expert (right from any state) at every state what
it would do. Per phone: closed-loop success, how episodes end, the step of the first disagreement,
and what the expert wanted against what the actor did there (action types; a touch on another
element counts as ``tap->other``); success on the seen templates' held-out tasks apart from the
templates no training phone ever showed (``world.phone.unseen_templates``). Writes ``benchmarks/results/actor_first_errors.json``::

    python benchmarks/actor_first_errors.py
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

import torch

from guimem.actors.mini.policy import MiniActor
from guimem.core.describe import target_element
from guimem.core.io import write_json
from guimem.core.policy import PolicyInput
from guimem.core.store import load_episodes
from guimem.eval.closed_loop import replay_tasks, replay_world_config
from guimem.eval.oracle import on_training_phones
from guimem.phone.expert import Expert
from guimem.phone.world import World
from guimem.pipeline.verify import machine

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).parent / "results" / "actor_first_errors.json"


def same(action, label, elements) -> bool:
    """The actor's action is the expert's: same type and, for a touch, the same element (else the same text or app)."""
    if action.type != label.type:
        return False
    if action.type in ("tap", "long_press"):
        a, b = target_element(action, elements), target_element(label, elements)
        return a is not None and b is not None and a.id == b.id
    if action.type in ("type", "open_app"):
        return (action.text or "").strip().lower() == (label.text or "").strip().lower()
    return True


def play(actor: MiniActor, replays, world_config, history_len: int) -> dict:
    rng = random.Random(0)
    first, ended, wanted, steps_before = Counter(), Counter(), Counter(), []
    success, by_template = 0, {"seen": [0, 0], "unseen": [0, 0]}  # [successes, episodes]
    for replay in replays:
        world = World(world_config)
        obs = world.reset(replay.task, replay.seed, replay.variant)
        expert = Expert(world, max_repeats=None)
        history, screens, strayed = [], [], False
        while True:
            inp = PolicyInput(obs.image, obs.elements, replay.task.goal, tuple(history[-history_len:]),
                              history_screens=tuple(screens[-history_len:]))
            action = actor.act([inp])[0].action
            label = expert.act(world, rng)[0]
            if not strayed and not same(action, label, obs.elements):
                strayed = True
                kind = f"{label.type}->{'other' if action.type == label.type else action.type}"
                first[kind] += 1
                wanted[label.type] += 1
                steps_before.append(len(history))
            history.append(action)
            screens.append(obs.elements)
            obs, done, info = world.step(action)
            if done:
                ended[info["ended"]] += 1
                success += bool(info["success"])
                group = by_template["unseen" if replay.task.template in world_config.unseen_templates else "seen"]
                group[0] += bool(info["success"])
                group[1] += 1
                break
    n = len(replays)
    return {"episodes": n, "success_rate": round(success / n, 4), "ended": dict(ended),
            "success_by_template": {g: {"successes": k, "episodes": m, "success_rate": round(k / m, 4) if m else None}
                                    for g, (k, m) in by_template.items()},
            "episodes_that_stray": sum(first.values()),
            "first_error_step_median": sorted(steps_before)[len(steps_before) // 2] if steps_before else None,
            "first_error": dict(first.most_common()), "expert_wanted_at_first_error": dict(wanted.most_common())}


def main() -> None:
    torch.set_num_threads(1)
    actor = MiniActor.load(ROOT / "pretrained" / "actor")
    test_root = ROOT / "data" / "world" / "test"
    config = replay_world_config(test_root, 20)
    replays = replay_tasks(load_episodes(test_root, verify_images=False), 1)
    runs = {"evaluation phone": play(actor, replays, config, actor.config.max_history),
            "training phones": play(actor, on_training_phones(replays, config.train_variants), config,
                                    actor.config.max_history)}
    write_json(OUT, {"machine": machine(), "actor": str(ROOT / "pretrained" / "actor"), "runs": runs})
    for name, r in runs.items():
        print(name, r)


if __name__ == "__main__":
    main()
    sys.exit(0)

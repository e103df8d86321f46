"""The noisy scripted demonstrator and dataset generation.

The demonstrator is an expert that knows every app-specific path: it runs a task's plan
(subgoals from the shared library, :mod:`guimem.phone.world`) move by move, scrolling to list
entries it cannot see, and dismissing popups as they come. Noise, per episode:

* **wrong taps** (per step, ``p_wrong_tap``): a tap on another control that leads somewhere
  (a dead end, a menu) or on empty space, undone with ``back``;
* **giving up** (``p_give_up``): midway, either ``impossible`` or wandering until the budget;
* **a wrong final state** (``p_wrong_state``): a sibling option, another item, a mistyped
  text (or stopping one subgoal short), then ``done``.

Every step carries the ground-truth :class:`~guimem.core.data.SubgoalLabel` of the subgoal
during which it happened (noise steps included); an episode's ``success`` is the world's
check on its hidden final state.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from tqdm import tqdm

from guimem.core.data import Action, Episode, Step, SubgoalLabel
from guimem.core.env import WorldObservation
from guimem.core.store import png_bytes, save_episodes
from guimem.phone.apps import APPS
from guimem.phone.config import WorldConfig
from guimem.phone.subgoals import SubgoalSpec, dismiss_popup
from guimem.phone.tasks import TEMPLATES, make_task, spec_of, subgoal_reuse
from guimem.phone.toolkit import H as LH
from guimem.phone.toolkit import Layout, stable_int
from guimem.phone.toolkit import W as LW
from guimem.phone.world import Task, World, screen_types

SAFE_COMMANDS = frozenset({"push", "overlay", "open"})  # what a wrong tap may trigger: undone by one back


class ExpertLost(RuntimeError):
    """The expert cannot find the control its plan needs (a bug in a plan or a screen)."""


# ----------------------------------------------------------------------------- expert moves
def _norm(x: float, y: float) -> tuple[float, float]:
    return (round(min(1.0, max(0.0, x / LW)), 4), round(min(1.0, max(0.0, y / LH)), 4))


def tap_point(layout: Layout, wid: str, rng: random.Random) -> tuple[float, float] | None:
    """A logical point that hits widget ``wid`` (near its centre, jittered), or None if it is covered."""
    w = layout.find(wid)
    if w is None:
        return None
    x0, y0, x1, y1 = w.box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    for _ in range(4):
        x = cx + (x1 - x0) * rng.uniform(-0.2, 0.2)
        y = cy + (y1 - y0) * rng.uniform(-0.2, 0.2)
        if layout.hit(x, y) is w:
            return x, y
    for fx in (0.5, 0.25, 0.75, 0.1, 0.9):
        for fy in (0.5, 0.25, 0.75):
            x, y = x0 + fx * (x1 - x0), y0 + fy * (y1 - y0)
            if layout.hit(x, y) is w:
                return x, y
    return None


def scroll_swipe(layout: Layout, direction: int, rng: random.Random) -> Action:
    """A vertical swipe in the scroll region that reveals rows below (+1) or above (-1)."""
    x0, y0, x1, y1 = layout.scroll_box
    x = (x0 + x1) / 2 + rng.uniform(-20, 20)
    lo, hi = y0 + 0.22 * (y1 - y0), y0 + 0.82 * (y1 - y0)
    start, end = (hi, lo) if direction > 0 else (lo, hi)
    return Action("swipe", point=_norm(x, start), end=_norm(x + rng.uniform(-4, 4), end))


def _locate(layout: Layout, wid: str, rng: random.Random, long: bool = False) -> tuple[Action, bool]:
    """Touch ``wid`` if it can be hit (done=True), else scroll towards it (done=False)."""
    pt = tap_point(layout, wid, rng)
    if pt is not None:
        return Action("long_press" if long else "tap", point=_norm(*pt)), True
    direction = dict(layout.offscreen).get(wid)
    if direction is None and layout.find(wid) is not None and layout.scroll_box is not None:
        direction = 1  # on screen but covered (e.g. by a floating button): bring it up
    if direction is None or layout.scroll_box is None:
        raise ExpertLost(f"cannot find {wid!r} on {layout.screen}")
    return scroll_swipe(layout, direction, rng), False


def expert_action(world: World, move: tuple, rng: random.Random, p_launcher_tap: float) -> tuple[Action, bool]:
    """The expert's next action for ``move`` and whether it completes the move."""
    kind, layout = move[0], world.layout
    if kind == "open_app":
        if world.state.app == "launcher" and rng.random() < p_launcher_tap:
            return _locate(layout, f"app:{move[1]}", rng)
        return Action("open_app", text=APPS[move[1]].name), True
    if kind in ("tap", "long"):
        return _locate(layout, move[1], rng, long=kind == "long")
    if kind == "type":
        if world.state.page.focus != move[1]:
            return _locate(layout, move[1], rng)[0], False
        return Action("type", text=move[2]), True
    if kind in ("enter", "back", "home"):
        return Action(kind), True
    raise ValueError(f"unknown move {move!r}")


def _wrong_tap(layout: Layout, avoid: str, rng: random.Random) -> tuple[Action, bool] | None:
    """A plausible mistake: a control leading elsewhere (needs back) or empty space (needs nothing)."""
    if layout.overlay:
        return None
    options = [w for w in layout.widgets if w.tap and w.tap[0] in SAFE_COMMANDS and w.id != avoid]
    if options and rng.random() < 0.8:
        w = rng.choice(options)
        x0, y0, x1, y1 = w.box
        x, y = (x0 + x1) / 2, (y0 + y1) / 2
        if layout.hit(x, y) is w:
            return Action("tap", point=_norm(x, y)), True
    for _ in range(8):
        x, y = rng.uniform(4, LW - 4), rng.uniform(20, LH - 4)
        if layout.hit(x, y) is None:
            return Action("tap", point=_norm(x, y)), False
    return None


def _wander(layout: Layout, rng: random.Random) -> Action:
    """An aimless but harmless action of a demonstrator who has given up."""
    options = [w for w in layout.active() if w.tap and w.tap[0] in SAFE_COMMANDS | {"tab", "dismiss"}]
    u = rng.random()
    if options and u < 0.55:
        w = rng.choice(options)
        pt = tap_point(layout, w.id, rng)
        if pt is not None:
            return Action("tap", point=_norm(*pt))
    if layout.scroll_box is not None and u < 0.75:
        return scroll_swipe(layout, rng.choice((-1, 1)), rng)
    return Action("back")


# ----------------------------------------------------------------------------- episodes
@dataclass
class _Tracker:
    """Assigns consecutive subgoal indices to subgoal instances as their first step is taken."""

    next_index: int = 0
    current: SubgoalLabel | None = None
    _key: Any = None

    def label(self, key: Any, sg: SubgoalSpec) -> SubgoalLabel:
        if key != self._key:
            self._key = key
            self.current = SubgoalLabel(self.next_index, sg.type, sg.text)
            self.next_index += 1
        return self.current


def _choose_mode(cfg: WorldConfig, rng: random.Random) -> str:
    u = rng.random()
    if u < cfg.p_give_up:
        return "give_up_impossible" if rng.random() < cfg.p_give_up_impossible else "give_up_budget"
    if u < cfg.p_give_up + cfg.p_wrong_state:
        return "wrong_state"
    return "clean"


def _wrong_plan(world: World, task: Task, plan: list[SubgoalSpec], rng: random.Random) -> list[SubgoalSpec]:
    """The plan run with wrong parameters (texts kept: the intent was right), or one subgoal short."""
    spec = spec_of(task)
    wrong = spec.corrupt(world.state.data, task.p, rng) if spec.corrupt else None
    if wrong and all(v is not None for v in wrong.values()) and wrong != task.p:
        alt = spec.full_plan(wrong)
        if [s.type for s in alt] == [s.type for s in plan]:
            return [dataclasses.replace(a, text=s.text) for a, s in zip(alt, plan)]
    return plan[:-1]


def run_episode(world: World, task: Task, seed: int, episode_id: str, images: dict[str, bytes] | None,
                config: WorldConfig | None = None, mode: str | None = None, strict: bool = False) -> Episode:
    """Demonstrate ``task`` once; PNG bytes of new screens are added to ``images`` (key -> bytes; None: skip).

    The returned episode's screenshot fields hold the screens' keys (store paths are
    assigned by :func:`guimem.core.store.save_episodes`). ``mode`` forces a noise mode
    ("clean", "wrong_state", "give_up_impossible", "give_up_budget"); with mode "clean"
    and ``p_wrong_tap`` 0 the run is noise-free. ``strict`` checks every subgoal's
    postcondition as it completes (raising :class:`ExpertLost` when one fails).
    """
    cfg = config or world.config
    rng = random.Random(stable_int("demonstrator", seed))
    obs = world.reset(task, seed)
    plan = spec_of(task).full_plan(task.p)
    mode = mode or _choose_mode(cfg, rng)
    run = _wrong_plan(world, task, plan, rng) if mode == "wrong_state" else plan
    give_up_at = rng.randint(1, max(1, len(plan) - 1)) if mode.startswith("give_up") else None
    track, steps = _Tracker(), []
    sg_i = move_i = 0
    recover = False
    popup: tuple[int, SubgoalSpec] | None = None
    n_popups = 0
    while True:
        layout, label = world.layout, None
        if world.state.popup:
            if popup is None:
                n_popups += 1
                popup = (n_popups, dismiss_popup(world.state.popup, by_back=rng.random() < 0.3))
            action, _ = expert_action(world, popup[1].moves[0], rng, cfg.p_launcher_tap)
            label = track.label(("popup", popup[0]), popup[1])
        elif recover:  # undo a wrong tap; it belongs to the subgoal it interrupted (resumed after a popup)
            action, recover = Action("back"), False
            label = track.label(("plan", sg_i), run[sg_i])
        elif give_up_at is not None and sg_i >= give_up_at:
            idx = min(sg_i, len(run) - 1)
            label = track.label(("plan", idx), run[idx])
            action = Action("impossible") if mode == "give_up_impossible" else _wander(layout, rng)
        elif sg_i >= len(run):  # `done` closes the last subgoal
            action, label = Action("done"), track.label(("plan", len(run) - 1), run[-1])
        else:
            sg = run[sg_i]
            if move_i >= len(sg.moves):
                if strict and not world.holds(sg.post):
                    raise ExpertLost(f"{task.template}: subgoal {sg.type} ({sg.text}) left {sg.post} unmet")
                sg_i, move_i = sg_i + 1, 0
                continue
            move = sg.moves[move_i]
            label = track.label(("plan", sg_i), sg)
            wrong = _wrong_tap(layout, move[1] if len(move) > 1 else "", rng) if rng.random() < cfg.p_wrong_tap else None
            if wrong is not None:
                action, recover = wrong
            else:
                action, complete = expert_action(world, move, rng, cfg.p_launcher_tap)
                move_i += complete
        assert label is not None
        new_obs, done, info = world.step(action)
        if popup is not None and not world.state.popup:
            popup = None
        steps.append(_step(obs, action, label, images))
        obs = new_obs
        if done:
            break
    _keep(obs, images)
    prov = {"seed": seed, "task": task.to_dict(), "demonstrator": mode, "ended": world.ended, "popups": n_popups,
            "max_steps": cfg.max_steps, "source": "guimem.world"}
    return Episode(id=episode_id, app=APPS[task.app].name, goal=task.goal, steps=tuple(steps),
                   final=obs.to_observation(obs.key), success=world.success(), provenance=prov)


def _keep(obs: WorldObservation, images: dict[str, bytes] | None) -> None:
    if images is not None and obs.key not in images:
        images[obs.key] = png_bytes(obs.image)


def _step(obs: WorldObservation, action: Action, label: SubgoalLabel, images: dict[str, bytes] | None) -> Step:
    _keep(obs, images)
    return Step(observation=obs.to_observation(obs.key), action=action, subgoal=label)


# ----------------------------------------------------------------------------- datasets
def split_combos(config: WorldConfig) -> dict[str, dict[str, list]]:
    """Per template, its parameter combinations for train and for test (a fixed hash split)."""
    out = {}
    for tid, t in TEMPLATES.items():
        combos = t.combos()
        if tid in config.unseen_templates:
            out[tid] = {"train": [], "test": combos}
            continue
        test = [c for c in combos if stable_int("split", tid, c) % 10_000 < config.test_param_share * 10_000]
        train = [c for c in combos if c not in test]
        if not train:  # every template is seen in training
            train, test = test[:1], test[1:]
        out[tid] = {"train": train, "test": test}
    return out


def plan_tasks(config: WorldConfig, seed: int) -> dict[str, list[Task]]:
    """The tasks of each split: templates balanced round-robin, parameters from the split's combos."""
    rng = random.Random(stable_int("tasks", seed))
    combos = split_combos(config)
    seen = [t for t in TEMPLATES if t not in config.unseen_templates]
    n_unseen = round(config.n_test * config.test_unseen_share) if config.unseen_templates else 0
    seen_test = [t for t in seen if combos[t]["test"]]

    def draw(templates: Sequence[str], n: int, split: str) -> list[Task]:
        tasks: list[Task] = []
        order: list[str] = []
        while len(tasks) < n:
            if not order:
                order = list(templates)
                rng.shuffle(order)
            tid = order.pop()
            tasks.append(make_task(tid, rng.choice(combos[tid][split])))
        return tasks

    test = draw(list(config.unseen_templates), n_unseen, "test") + draw(seen_test, config.n_test - n_unseen, "test")
    return {"train": draw(seen, config.n_train, "train"), "test": test}


def unseen_types_covered(config: WorldConfig) -> bool:
    """Whether every subgoal type of the unseen templates also occurs in a training template."""
    def types(tids: Iterable[str]) -> set[str]:
        return {sg.type for t in tids for sg in TEMPLATES[t].full_plan(dict(TEMPLATES[t].combos()[0]))}
    seen = [t for t in TEMPLATES if t not in config.unseen_templates]
    return types(config.unseen_templates) <= types(seen)


def demonstrate(config: WorldConfig, tasks: Sequence[Task], seed: int, split: str, progress: bool = True,
                encode: bool = True) -> tuple[list[Episode], dict[str, bytes]]:
    """Run the demonstrator on ``tasks``; returns the episodes and the PNG bytes of their screens.

    Episode ``i`` of ``split`` is seeded from ``(seed, split, i)``; ``encode=False`` skips
    the PNG encoding (the images dict stays empty) when only the trajectories are needed.
    """
    world = World(config)
    images: dict[str, bytes] = {}
    episodes = []
    for i, task in enumerate(tqdm(tasks, desc=f"world {split}", disable=not progress, unit="ep")):
        ep_seed = stable_int("episode", seed, split, i) % 2**31
        ep = run_episode(world, task, ep_seed, f"{split}-{i:04d}", images if encode else None, config)
        episodes.append(dataclasses.replace(ep, provenance={**ep.provenance, "split": split}))
    return episodes, images


def dataset_stats(episodes: Sequence[Episode], config: WorldConfig) -> dict[str, Any]:
    """Counts and rates of one split: episodes, steps, success, noise modes, screens per app."""
    n = len(episodes)
    types_seen: dict[str, set[str]] = {}
    shots: dict[str, set[str]] = {}
    for ep in episodes:
        for obs in ep.observations:
            app = (obs.screen or "").split("/")[0]
            types_seen.setdefault(app, set()).add(obs.screen)
            shots.setdefault(app, set()).add(obs.screenshot)
    return {
        "episodes": n,
        "steps": sum(len(e.steps) for e in episodes),
        "mean_steps": round(sum(len(e.steps) for e in episodes) / max(1, n), 3),
        "success_rate": round(sum(bool(e.success) for e in episodes) / max(1, n), 4),
        "success_in_range": config.success_min <= sum(bool(e.success) for e in episodes) / max(1, n) <= config.success_max,
        "modes": dict(sorted(Counter(e.provenance["demonstrator"] for e in episodes).items())),
        "ended": dict(sorted(Counter(e.provenance["ended"] for e in episodes).items())),
        "episodes_with_popup": sum(e.provenance["popups"] > 0 for e in episodes),
        "templates": len({e.provenance["task"]["template"] for e in episodes}),
        "screen_types_seen_per_app": {k: len(v) for k, v in sorted(types_seen.items())},
        "screenshots_per_app": {k: len(v) for k, v in sorted(shots.items())},
    }


def generate_dataset(config: WorldConfig, out_dir: str | Path, seed: int, progress: bool = True) -> dict[str, Any]:
    """Write ``out_dir/train`` and ``out_dir/test`` episode stores; return the dataset statistics.

    The test split holds parameter combinations never used in training, plus the
    ``unseen_templates`` (new tasks composed of subgoal types seen in training).
    """
    if not unseen_types_covered(config):
        raise ValueError("an unseen template uses a subgoal type no training template uses")
    out = Path(out_dir)
    tasks = plan_tasks(config, seed)
    stats: dict[str, Any] = {"seed": seed, "world": config.to_dict()}
    for split in ("train", "test"):
        episodes, images = demonstrate(config, tasks[split], seed, split, progress)
        meta = {"split": split, "seed": seed, "world": config.to_dict(), "generator": "guimem.demonstrator"}
        save_episodes(episodes, images, out / split, meta)
        stats[split] = dataset_stats(episodes, config)
        stats[split]["unique_screenshots"] = len(images)
    reuse = subgoal_reuse()
    n = stats["train"]["episodes"] + stats["test"]["episodes"]
    stats.update({
        "episodes": n,
        "steps": stats["train"]["steps"] + stats["test"]["steps"],
        "success_rate": round((stats["train"]["success_rate"] * stats["train"]["episodes"]
                               + stats["test"]["success_rate"] * stats["test"]["episodes"]) / max(1, n), 4),
        "templates": len(TEMPLATES),
        "unseen_templates": list(config.unseen_templates),
        "subgoal_types": reuse["types_used"],
        "subgoal_reuse_share": round(reuse["share"], 4),
        "screen_types_per_app": {k: len(v) for k, v in screen_types().items()},
    })
    return stats

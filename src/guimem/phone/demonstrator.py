"""The noisy scripted demonstrator and dataset generation.

The demonstrator is the expert (:class:`guimem.phone.expert.Expert`, which knows every app
variant's paths and acts right from any state) with noise on top: it follows the task's plan
move by move, scrolling to list entries it cannot see and dismissing popups as they come, and
the expert's recovery undoes its mistakes. Noise, per episode:

* **wrong taps** (per step, ``p_wrong_tap``): a tap on another control that leads somewhere
  (a dead end, a menu) or on empty space; the expert goes back from where it strayed;
* **giving up** (``p_give_up``): midway, either ``impossible`` or wandering until the budget;
* **a wrong final state** (``p_wrong_state``): a sibling option, another item, a mistyped
  text (or stopping one subgoal short), then ``done``.

Every step carries the ground-truth :class:`~guimem.core.data.SubgoalLabel` of the subgoal
during which it happened (noise steps included) and the expert's action from its state
(``Step.expert``: the true task's expert, whatever the demonstrator did — the target a learner
is trained on, so noise stays in the stores and in memory but is never imitated); an episode's
``success`` is the world's check on its hidden final state.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence

from guimem.core.data import Action, Episode, Step, SubgoalLabel
from guimem.core.env import WorldObservation
from guimem.core.progress import progress_bar
from guimem.core.store import SPLITS, png_bytes, save_episodes
from guimem.phone.apps import APPS
from guimem.phone.config import WorldConfig
from guimem.phone.expert import BACK, DONE, POPUP, Expert, ExpertLost, norm_point, play, scroll_swipe, tap_point
from guimem.phone.subgoals import SubgoalSpec, dismiss_popup
from guimem.phone.tasks import TEMPLATES, make_task, spec_of, subgoal_reuse
from guimem.phone.toolkit import H as LH
from guimem.phone.toolkit import Layout, stable_int
from guimem.phone.toolkit import W as LW
from guimem.phone.world import Task, World, screen_types

SAFE_COMMANDS = frozenset({"push", "overlay", "open"})  # what a wrong tap may trigger: undone by one back


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
            return Action("tap", point=norm_point(x, y)), True
    for _ in range(8):
        x, y = rng.uniform(4, LW - 4), rng.uniform(20, LH - 4)
        if layout.hit(x, y) is None:
            return Action("tap", point=norm_point(x, y)), False
    return None


def _wander(layout: Layout, rng: random.Random) -> Action:
    """An aimless but harmless action of a demonstrator who has given up."""
    options = [w for w in layout.active() if w.tap and w.tap[0] in SAFE_COMMANDS | {"tab", "dismiss"}]
    u = rng.random()
    if options and u < 0.55:
        w = rng.choice(options)
        pt = tap_point(layout, w.id, rng)
        if pt is not None:
            return Action("tap", point=norm_point(*pt))
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


def _wrong_plan(world: World, task: Task, plan: list[SubgoalSpec], rng: random.Random
                ) -> tuple[list[SubgoalSpec], dict[str, str] | None]:
    """The plan run with wrong parameters (texts kept: the intent was right) and those parameters,
    or the plan one subgoal short (parameters None)."""
    spec = spec_of(task)
    wrong = spec.corrupt(world.state.data, task.p, rng) if spec.corrupt else None
    if wrong and all(v is not None for v in wrong.values()) and wrong != task.p:
        alt = spec.full_plan(wrong, world.config.start)
        if [s.type for s in alt] == [s.type for s in plan]:
            return [dataclasses.replace(a, text=s.text) for a, s in zip(alt, plan)], wrong
    return plan[:-1], None


def run_episode(world: World, task: Task, seed: int, episode_id: str, images: dict[str, bytes] | None,
                config: WorldConfig | None = None, mode: str | None = None, strict: bool = False,
                variant: int = 0) -> Episode:
    """Demonstrate ``task`` once on variant ``variant``; PNG bytes of new screens are added to
    ``images`` (key -> bytes; None: skip).

    The returned episode's screenshot fields hold the screens' keys (store paths are
    assigned by :func:`guimem.core.store.save_episodes`). ``mode`` forces a noise mode
    ("clean", "wrong_state", "give_up_impossible", "give_up_budget"); with mode "clean"
    and ``p_wrong_tap`` 0 the run is noise-free. ``strict`` checks every subgoal's
    postcondition on the expert's noise-free run (raising :class:`ExpertLost` when one fails).
    """
    cfg = config or world.config
    rng = random.Random(stable_int("demonstrator", seed))
    obs = world.reset(task, seed, variant)
    plan = spec_of(task).full_plan(task.p, cfg.start)
    mode = mode or _choose_mode(cfg, rng)
    run, finished = plan, "task"
    if mode == "wrong_state":
        run, wrong = _wrong_plan(world, task, plan, rng)
        if wrong is None:
            finished = None  # one subgoal short: done where the shortened plan ends
        else:
            wrong_task = make_task(task.template, tuple(sorted(wrong.items())))
            finished = lambda w: bool(spec_of(wrong_task).check(w.state.data, wrong_task.p))  # noqa: E731
    expert = Expert(world, run, finished, strict=strict)
    teacher = Expert(world, max_repeats=None)  # the true task's expert labels every state the demonstrator visits
    teacher_rng = random.Random(stable_int("teacher", seed))
    give_up_at = rng.randint(1, max(1, len(plan) - 1)) if mode.startswith("give_up") else None
    track, steps = _Tracker(), []
    popup: tuple[int, SubgoalSpec] | None = None
    n_popups = 0
    sg_i = 0  # the plan subgoal under way: going back and reopening the app serve it; giving up freezes it
    while True:
        layout = world.layout
        decision = expert.decide(world)
        if decision.index == POPUP:
            if popup is None:
                n_popups += 1
                popup = (n_popups, dismiss_popup(world.state.popup, by_back=rng.random() < 0.3))
            action, _ = expert.act(world, rng, cfg.p_launcher_tap, decision)
            if popup[1].moves[0] == ("back",):
                action = Action("back")
            label = track.label(("popup", popup[0]), popup[1])
        else:
            gave_up = give_up_at is not None and sg_i >= give_up_at
            if decision.index >= 0 and not gave_up:
                sg_i = max(0, min(decision.subgoal, len(run) - 1))
            elif decision.index == DONE:
                sg_i = len(run) - 1
            label = track.label(("plan", sg_i), run[sg_i])
            if give_up_at is not None and sg_i >= give_up_at:
                action = Action("impossible") if mode == "give_up_impossible" else _wander(layout, rng)
            elif decision.index not in (DONE, BACK) and rng.random() < cfg.p_wrong_tap \
                    and (wrong := _wrong_tap(layout, _target(expert, decision), rng)) is not None:
                action = wrong[0]
            else:
                action, _ = expert.act(world, rng, cfg.p_launcher_tap, decision)
        right = teacher.act(world, teacher_rng)[0]
        new_obs, done, info = world.step(action)
        if popup is not None and not world.state.popup:
            popup = None
        steps.append(_step(obs, action, label, images, right))
        obs = new_obs
        if done:
            break
    _keep(obs, images)
    prov = {"seed": seed, "task": task.to_dict(), "variant": variant, "demonstrator": mode, "ended": world.ended,
            "popups": n_popups, "max_steps": cfg.max_steps, "source": "guimem.world"}
    return Episode(id=episode_id, app=APPS[task.app].name, goal=task.goal, steps=tuple(steps),
                   final=obs.to_observation(obs.key), success=world.success(), provenance=prov)


def _target(expert: Expert, decision) -> str:
    """The widget the expert's decision touches ("" if none): a wrong tap avoids it."""
    if decision.index < 0:
        return ""
    move = expert.trace[decision.index].move
    return move[1] if len(move) > 1 and isinstance(move[1], str) else ""


def _keep(obs: WorldObservation, images: dict[str, bytes] | None) -> None:
    if images is not None and obs.key not in images:
        images[obs.key] = png_bytes(obs.image)


def _step(obs: WorldObservation, action: Action, label: SubgoalLabel, images: dict[str, bytes] | None,
          expert: Action) -> Step:
    _keep(obs, images)
    return Step(observation=obs.to_observation(obs.key), action=action, subgoal=label, expert=expert)


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


class Assignment(NamedTuple):
    """A task to demonstrate and the app variant the phone runs it on."""

    task: Task
    variant: int


def plan_tasks(config: WorldConfig, seed: int) -> dict[str, list[Assignment]]:
    """The tasks of each split, templates balanced round-robin and variants in turn.

    * ``train``: the seen templates' training parameters, on the train variants;
    * ``test``: held-out parameters of seen templates plus the unseen templates, on the
      evaluation variants;
    * ``memory``: past experience on the evaluation variants, every template, but never a test
      episode's task (template and parameters) on any variant: memory of *other* tasks.
    """
    rng = random.Random(stable_int("tasks", seed))
    combos = split_combos(config)
    seen = [t for t in TEMPLATES if t not in config.unseen_templates]
    n_unseen = round(config.n_test * config.test_unseen_share) if config.unseen_templates else 0
    seen_test = [t for t in seen if combos[t]["test"]]

    def draw(templates: Sequence[str], n: int, pools: dict[str, list], variants: Sequence[int],
             avoid: set[tuple] = frozenset()) -> list[Assignment]:
        pools = {t: [c for c in pools[t] if (t, c) not in avoid] for t in templates}
        templates = [t for t in templates if pools[t]]
        if n and not templates:
            raise ValueError("no task left to draw: every parameter combination is held out")
        out: list[Assignment] = []
        order: list[str] = []
        while len(out) < n:
            if not order:
                order = list(templates)
                rng.shuffle(order)
            tid = order.pop()
            out.append(Assignment(make_task(tid, rng.choice(pools[tid])), variants[len(out) % len(variants)]))
        return out

    train_pool = {t: c["train"] for t, c in combos.items()}
    test_pool = {t: c["test"] for t, c in combos.items()}
    ev = config.eval_variants
    test = draw(list(config.unseen_templates), n_unseen, test_pool, ev) + draw(seen_test, config.n_test - n_unseen, test_pool, ev)
    taken = {(a.task.template, a.task.params) for a in test}
    every = {t: c["train"] + c["test"] for t, c in combos.items()}
    return {"train": draw(seen, config.n_train, train_pool, config.train_variants),
            "test": test,
            "memory": draw(list(TEMPLATES), config.n_memory, every, ev, taken)}


def shared_tasks(test: Sequence[Assignment], memory: Sequence[Assignment]) -> int:
    """How many ``test`` assignments ask a task (template and parameters) some ``memory`` assignment
    demonstrates, on any variant: a goal the memory holds verbatim, where memory is meant to be
    experience of other tasks (:func:`plan_tasks` keeps every test task out of memory: 0)."""
    remembered = {(a.task.template, a.task.params) for a in memory}
    return sum((a.task.template, a.task.params) in remembered for a in test)


def holds_everywhere(world: World, assignment: Assignment, seed: int) -> bool:
    """Whether the expert's noise-free path for ``assignment`` on its variant is the path on the
    reference design (variant 0) with the same world seed: the same moves on widgets that read and
    look the same (no synonym, no glyph of the variant's own design, no switch moved, no other
    route). Such a task needs no experience of the phone: its path holds on every variant."""
    task, variant = assignment
    plan = spec_of(task).full_plan(task.p, world.config.start)

    def path(v: int) -> list[tuple]:
        world.reset(task, seed, v)
        try:
            return [(e.move, e.look) for e in play(world.fork(), plan)]
        except ExpertLost:
            return [("lost", v)]

    return path(variant) == path(0)


def unseen_types_covered(config: WorldConfig) -> bool:
    """Whether every subgoal type of the unseen templates also occurs in a training template."""
    def types(tids: Iterable[str]) -> set[str]:
        return {sg.type for t in tids for sg in TEMPLATES[t].full_plan(dict(TEMPLATES[t].combos()[0]))}
    seen = [t for t in TEMPLATES if t not in config.unseen_templates]
    return types(config.unseen_templates) <= types(seen)


def demonstrate(config: WorldConfig, tasks: Sequence[Assignment], seed: int, split: str, progress: bool = True,
                encode: bool = True) -> tuple[list[Episode], dict[str, bytes]]:
    """Run the demonstrator on ``tasks`` (each on its variant); returns the episodes and the PNG bytes of their screens.

    Episode ``i`` of ``split`` is seeded from ``(seed, split, i)``; ``encode=False`` skips
    the PNG encoding (the images dict stays empty) when only the trajectories are needed.
    """
    world = World(config)
    images: dict[str, bytes] = {}
    episodes = []
    for i, (task, variant) in enumerate(progress_bar(tasks, desc=f"world {split}", disable=not progress, unit="ep")):
        ep_seed = stable_int("episode", seed, split, i) % 2**31
        ep = run_episode(world, task, ep_seed, f"{split}-{i:04d}", images if encode else None, config, variant=variant)
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
    runs = sum(1 + sum(a.subgoal.index != b.subgoal.index for a, b in zip(e.steps, e.steps[1:])) for e in episodes if e.steps)
    ends = sum(s.action.type in ("done", "impossible") for e in episodes for s in e.steps)
    steps = sum(len(e.steps) for e in episodes)
    return {
        "episodes": n,
        "steps": steps,
        "subgoals": runs,
        "actions_per_subgoal": round(steps / max(1, runs), 3),
        "actions_per_subgoal_without_end": round((steps - ends) / max(1, runs), 3),
        "variants": dict(sorted(Counter(e.provenance["variant"] for e in episodes).items())),
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
    """Write the ``out_dir/train``, ``out_dir/test`` and ``out_dir/memory`` episode stores; return the statistics.

    Training runs on the train variants; the test split (parameter combinations never used in
    training, plus the ``unseen_templates``) and the memory (experience of other tasks) run on the
    evaluation variants (:func:`plan_tasks`).
    """
    if not unseen_types_covered(config):
        raise ValueError("an unseen template uses a subgoal type no training template uses")
    out = Path(out_dir)
    tasks = plan_tasks(config, seed)
    planner = World(config, render=False)
    stats: dict[str, Any] = {"seed": seed, "world": config.to_dict(),
                             "memory_test_goal_overlap": shared_tasks(tasks["test"], tasks["memory"]),
                             "test_tasks_without_experience": round(
                                 sum(holds_everywhere(planner, a, stable_int("episode", seed, "test", i) % 2**31)
                                     for i, a in enumerate(tasks["test"])) / max(1, len(tasks["test"])), 4)}
    for split in SPLITS:
        episodes, images = demonstrate(config, tasks[split], seed, split, progress)
        meta = {"split": split, "seed": seed, "world": config.to_dict(), "generator": "guimem.demonstrator"}
        save_episodes(episodes, images, out / split, meta)
        stats[split] = dataset_stats(episodes, config)
        stats[split]["unique_screenshots"] = len(images)
    reuse = subgoal_reuse()
    n = sum(stats[s]["episodes"] for s in SPLITS)
    stats.update({
        "episodes": n,
        "steps": sum(stats[s]["steps"] for s in SPLITS),
        "success_rate": round(sum(stats[s]["success_rate"] * stats[s]["episodes"] for s in SPLITS) / max(1, n), 4),
        "templates": len(TEMPLATES),
        "unseen_templates": list(config.unseen_templates),
        "subgoal_types": reuse["types_used"],
        "subgoal_reuse_share": round(reuse["share"], 4),
        "screen_types_per_app": {k: len(v) for k, v in screen_types().items()},
    })
    return stats

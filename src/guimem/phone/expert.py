"""The expert: the right next action for a task from any state of the phone.

The expert knows the task's plan (subgoals from :mod:`guimem.phone.subgoals`) and can look at
the phone's hidden state, as the demonstrator and the DAgger teacher may (an agent may not).
When it is built (:class:`Expert`, right after ``World.reset``) it plays the plan once on a copy
of the phone, noise-free, and keeps the **trace**: every move with the place it was made from
(app, page, argument, overlay). Navigation moves (``("reach", target)``) become the shortest
route of touches on *this* phone, found by :func:`route` — so the same plan follows each app
variant's own menus.

From any state the expert then asks: where am I? If a trace segment was made from this very
place, it continues with that segment's first move not yet achieved (a field not yet holding
its text, a switch not yet in its state, a quantity not yet set); otherwise it presses back,
which leads towards the app's root, where the trace starts. Before that come the two things that
override the plan: an interrupting popup is dismissed, and a task whose check already holds is
answered with ``done``. A task that a detour made impossible (the note to rename was deleted,
the product added twice) gets ``impossible``: the expert cannot find what its plan needs, or
keeps making the same move without effect. ``tests/test_expert.py`` checks that from states
reached by random perturbations the expert completes at least 98% of tasks.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence

from guimem.core.data import Action
from guimem.phone.apps import APPS
from guimem.phone.subgoals import Move, SubgoalSpec
from guimem.phone.tasks import spec_of
from guimem.phone.toolkit import H as LH
from guimem.phone.toolkit import Layout, PhoneState
from guimem.phone.toolkit import W as LW
from guimem.phone.world import World, build_layout, go_back, run_command, shows

Loc = tuple[str, str, str, str, str]  # app, page screen, page argument, overlay id, overlay argument
NAV_COMMANDS = frozenset({"push", "tab", "overlay", "close"})  # what a route may touch (never data, never another app)
MAX_ROUTE_STATES = 4000  # a route search gives up after this many distinct places
MAX_MOVE_ACTIONS = 12  # actions one move may take (scrolling to a row, focusing a field) before the expert is lost
MAX_REPEATS = 12  # times the expert acts on one trace entry before it gives the task up as impossible

POPUP, BACK, OPEN, DONE = -1, -2, -3, -4  # decisions that are not a trace entry


class ExpertLost(RuntimeError):
    """The expert cannot carry out its plan (a bug in a plan or a screen, or a task made impossible)."""


# ----------------------------------------------------------------------------- touching
def norm_point(x: float, y: float) -> tuple[float, float]:
    """A logical point as the normalised [0, 1] point of an action."""
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
    return Action("swipe", point=norm_point(x, start), end=norm_point(x + rng.uniform(-4, 4), end))


def locate(layout: Layout, wid: str, rng: random.Random, long: bool = False) -> tuple[Action, bool]:
    """Touch ``wid`` if it can be hit (True: the touch is made), else scroll towards it (False)."""
    pt = tap_point(layout, wid, rng)
    if pt is not None:
        return Action("long_press" if long else "tap", point=norm_point(*pt)), True
    direction = dict(layout.offscreen).get(wid)
    if direction is None and layout.find(wid) is not None and layout.scroll_box is not None:
        direction = 1  # on screen but covered (e.g. by a floating button): bring it up
    if direction is None or layout.scroll_box is None:
        raise ExpertLost(f"cannot find {wid!r} on {layout.screen}")
    return scroll_swipe(layout, direction, rng), False


# ----------------------------------------------------------------------------- places and routes
def loc_of(state: PhoneState) -> Loc:
    """Where the phone is: app, top page and its argument, and the overlay (popups aside)."""
    if state.app == "launcher":
        return ("launcher", "launcher/home", "", "", "")
    page, overlay = state.page, state.overlay or ("", "")
    return (state.app, page.screen, page.arg, overlay[0], overlay[1])


def _reached(state: PhoneState, layout: Layout, target: tuple) -> bool:
    if target[0] == "widget":
        return shows(layout, target[1])
    if target[0] == "page":
        return state.overlay is None and (state.page.screen, state.page.arg) == (target[1], target[2])
    raise ValueError(f"unknown route target {target!r}")


def _views(state: PhoneState, layout: Layout) -> list[Layout]:
    """The screen at every scroll position of its list (a route may touch a row further down)."""
    if layout.overlay or layout.scroll_max == 0 or layout.scroll_box is None:
        return [layout]
    visible = max(1, (layout.scroll_box[3] - layout.scroll_box[1]) // layout.scroll_step)
    out = []
    for scroll in sorted({*range(0, layout.scroll_max + 1, visible), layout.scroll_max}):
        page = dataclasses.replace(state.page, scroll=scroll)
        out.append(build_layout(dataclasses.replace(state, stack=state.stack[:-1] + [page])))
    return out


def route(state: PhoneState, target: tuple, max_states: int = MAX_ROUTE_STATES) -> list[tuple[str, str]] | None:
    """The shortest route of navigation touches from ``state`` to where ``target`` is shown.

    A route step is ``("tap", wid)``, ``("long", wid)`` or ``("back", "")``; it only moves between
    pages and menus of the current app (never changes data). ``target`` is ``("widget", wid)`` or
    ``("page", screen, arg)``. Returns ``[]`` when already there and None when it cannot be reached.
    """
    start = dataclasses.replace(state, stack=list(state.stack), popup=None)
    seen = {_key(start)}
    queue: deque[tuple[PhoneState, list[tuple[str, str]]]] = deque([(start, [])])
    while queue:
        st, path = queue.popleft()
        layout = build_layout(st)
        if _reached(st, layout, target):
            return path
        steps: list[tuple[tuple[str, str], tuple]] = []
        for view in _views(st, layout):
            for w in view.active():
                for kind, cmd in (("tap", w.tap), ("long", w.long)):
                    if cmd and cmd[0] in NAV_COMMANDS:
                        steps.append(((kind, w.id), cmd))
        steps.append((("back", ""), ("back",)))
        for step, cmd in steps:
            child = dataclasses.replace(st, stack=list(st.stack))
            if cmd[0] == "back":
                if child.app == "launcher" or (len(child.stack) == 1 and child.overlay is None):
                    continue  # back would leave the app
                go_back(child)
            else:
                run_command(child, cmd)
            key = _key(child)
            if key not in seen:
                seen.add(key)
                if len(seen) > max_states:
                    return None
                queue.append((child, path + [step]))
    return None


def _key(state: PhoneState) -> tuple:
    return (state.app, tuple((p.screen, p.arg) for p in state.stack), state.overlay)


# ----------------------------------------------------------------------------- moves
def achieved(world: World, move: Move) -> bool:
    """Whether ``move``'s effect already holds where the phone is (so it need not be made)."""
    kind, st = move[0], world.state
    if st.app == "launcher":
        return False
    page = st.page
    if kind == "switch":
        w = world.layout.find(move[1])
        return w is not None and w.on == move[2]
    if kind == "type":
        return page.fields.get(move[1]) == move[2]
    if kind == "enter":
        return page.fields.get("query") == move[1]
    if kind == "set_qty":
        return page.fields.get("qty") == move[1]
    return False


def move_action(world: World, move: Move, rng: random.Random, p_launcher_tap: float = 0.0) -> tuple[Action, bool]:
    """The next action towards ``move`` and whether it completes the move."""
    kind, layout = move[0], world.layout
    if kind == "open_app":
        if world.state.app == "launcher" and rng.random() < p_launcher_tap:
            return locate(layout, f"app:{move[1]}", rng)
        return Action("open_app", text=APPS[move[1]].name), True
    if kind in ("tap", "long", "switch"):
        return locate(layout, move[1], rng, long=kind == "long")
    if kind == "type":
        if world.state.page.focus != move[1]:
            return locate(layout, move[1], rng)[0], False
        return Action("type", text=move[2]), True
    if kind == "set_qty":
        qty = int(world.state.page.fields.get("qty", "1"))
        action, _ = locate(layout, "icon:qty_plus" if qty < int(move[1]) else "icon:qty_minus", rng)
        return action, abs(qty - int(move[1])) == 1
    if kind in ("enter", "back", "home"):
        return Action(kind), True
    raise ValueError(f"unknown move {move!r}")


# ----------------------------------------------------------------------------- the expert
@dataclass(frozen=True)
class TraceEntry:
    """One move of the noise-free run: where it was made from, which subgoal it belongs to, and how
    the widget it touches looks there (its words and its glyph as this phone draws them)."""

    loc: Loc
    move: Move
    subgoal: int
    look: tuple[str, str] = ("", "")


def play(world: World, plan: Sequence[SubgoalSpec], strict: bool = False) -> list[TraceEntry]:
    """Play ``plan`` on ``world`` (a :meth:`World.fork`, which this changes) and return its trace.

    ``strict`` checks each subgoal's postcondition when its moves are done (:class:`ExpertLost` if not).
    """
    rng = random.Random(0)
    trace: list[TraceEntry] = []
    for i, sg in enumerate(plan):
        for move in sg.moves:
            if move[0] == "reach":
                path = route(world.state, move[1])
                if path is None:
                    raise ExpertLost(f"no route to {move[1]} from {loc_of(world.state)}")
                moves = [("back",) if kind == "back" else (kind, wid) for kind, wid in path]
            else:
                moves = [move]
            for m in moves:
                widget = world.layout.find(m[1]) if len(m) > 1 and isinstance(m[1], str) else None
                look = (widget.text or widget.desc, widget.glyph) if widget is not None else ("", "")
                trace.append(TraceEntry(loc_of(world.state), m, i, look))
                for _ in range(MAX_MOVE_ACTIONS):
                    if achieved(world, m):
                        break
                    action, complete = move_action(world, m, rng)
                    world.step(action)
                    if complete:
                        break
                else:
                    raise ExpertLost(f"move {m} not done after {MAX_MOVE_ACTIONS} actions at {loc_of(world.state)}")
        if strict and not world.holds(sg.post):
            raise ExpertLost(f"subgoal {sg.type} ({sg.text}) left {sg.post} unmet")
    return trace


@dataclass(frozen=True)
class Decision:
    """What the expert does next: a trace entry (``index`` >= 0) or POPUP, BACK, OPEN or DONE."""

    index: int
    subgoal: int  # the plan subgoal it serves (-1: a popup)


class Expert:
    """The right next action for a task from any state of ``world`` (built right after its reset).

    ``plan`` defaults to the task's own; ``finished`` to the task's check on the hidden state.
    A demonstrator that means to stop short passes ``finished=None``: it is finished once the
    whole trace is played and the phone is where the trace ended. ``max_repeats``: how often it
    makes one move before it gives the task up (None: never, as a teacher that only labels states
    someone else visits must).
    """

    def __init__(self, world: World, plan: Sequence[SubgoalSpec] | None = None,
                 finished: Callable[[World], bool] | None | str = "task", strict: bool = False,
                 max_repeats: int | None = MAX_REPEATS):
        task = world.task
        spec = spec_of(task)
        self.plan = list(plan) if plan is not None else spec.full_plan(task.p, world.config.start)
        self.app = task.app
        twin = world.fork()
        self.trace = play(twin, self.plan, strict)
        self.end_loc = loc_of(twin.state)
        self._finished = (lambda w: w.holds(("task",))) if finished == "task" else finished
        self.segments: list[tuple[Loc, list[int]]] = []
        for i, entry in enumerate(self.trace):
            if self.segments and self.segments[-1][0] == entry.loc and self.segments[-1][1][-1] == i - 1:
                self.segments[-1][1].append(i)
            else:
                self.segments.append((entry.loc, [i]))
        self.progress = 0  # the latest trace entry acted on
        self.played_out = not self.trace  # the last entry has been completed
        self.repeats: dict[int, int] = {}  # trace entry -> times acted on
        self.max_repeats = max_repeats
        self.lost = ""  # why the expert gave the task up ("" while it has not)

    def finished(self, world: World) -> bool:
        """Whether the task is done (so the next action is ``done``)."""
        if self._finished is not None:
            return self._finished(world)
        return self.played_out and loc_of(world.state) == self.end_loc

    def decide(self, world: World) -> Decision:
        """What to do next from the current state of ``world`` (nothing is changed)."""
        st = world.state
        current = self.trace[self.progress].subgoal if self.trace else 0
        if st.popup:
            return Decision(POPUP, -1)
        if self.finished(world):
            return Decision(DONE, self.trace[-1].subgoal if self.trace else 0)
        if st.app != self.app:
            return Decision(OPEN, current)
        here = loc_of(st)
        for loc, indices in reversed(self.segments):
            if loc != here:
                continue
            for i in indices:
                if not achieved(world, self.trace[i].move):
                    return Decision(i, self.trace[i].subgoal)
        return Decision(BACK, current)

    def act(self, world: World, rng: random.Random, p_launcher_tap: float = 0.0,
            decision: Decision | None = None) -> tuple[Action, Decision]:
        """The next action (and the decision behind it); call again after each step.

        ``impossible`` when the plan cannot be carried out from here (:attr:`lost` says why).
        """
        d = decision or self.decide(world)
        try:
            return self._act(world, rng, p_launcher_tap, d)
        except ExpertLost as err:
            self.lost = str(err)
            return Action("impossible"), d

    def _act(self, world: World, rng: random.Random, p_launcher_tap: float, d: Decision) -> tuple[Action, Decision]:
        if d.index == POPUP:  # one action per state: the popup's own close button (back would do as well)
            return locate(world.layout, "btn:dismiss", rng)[0], d
        if d.index == DONE:
            return Action("done"), d
        if d.index == OPEN:
            return move_action(world, ("open_app", self.app), rng, p_launcher_tap)[0], d
        if d.index == BACK:
            return Action("back"), d
        self.repeats[d.index] = self.repeats.get(d.index, 0) + 1
        if self.max_repeats is not None and self.repeats[d.index] > self.max_repeats:
            raise ExpertLost(f"{self.trace[d.index].move} made {self.max_repeats} times without effect")
        action, complete = move_action(world, self.trace[d.index].move, rng, p_launcher_tap)
        self.progress = max(self.progress, d.index)
        if complete and d.index == len(self.trace) - 1:
            self.played_out = True
        return action, d


# ----------------------------------------------------------------------------- robustness
def random_action(world: World, rng: random.Random) -> Action:
    """A random perturbation: a touch on any control (long presses too), a scroll, typing, enter or back."""
    layout = world.layout
    clickable = [w for w in layout.active() if w.clickable]
    u = rng.random()
    if u < 0.6 and clickable:
        w = rng.choice(clickable)
        pt = tap_point(layout, w.id, rng)
        if pt is not None:
            return Action("long_press" if w.long and rng.random() < 0.3 else "tap", point=norm_point(*pt))
    if u < 0.7 and layout.scroll_box is not None:
        return scroll_swipe(layout, rng.choice((-1, 1)), rng)
    if u < 0.8:
        return Action("type", text=rng.choice(("abc", "hello", "7:30", "2")))
    if u < 0.85:
        return Action("enter")
    return Action("back")


def perturbed_completion(world: World, jobs: Sequence[tuple], seed: int, max_perturbations: int = 5,
                         budget: int = 40) -> dict:
    """How often the expert completes a task after being knocked off course.

    For each ``(task, variant)`` of ``jobs``: reset (seeded), let the expert make a random number of
    its moves, make 1..``max_perturbations`` random actions (:func:`random_action`), then let the
    expert play on for at most ``budget`` steps. Returns the completion rate, the count, and the
    failures per template (some perturbations make a task impossible: a deleted note, a doubled item).
    """
    rng = random.Random(seed)
    done, failures = 0, {}
    for i, (task, variant) in enumerate(jobs):
        world.reset(task, seed * 100_003 + i, variant)
        expert = Expert(world)
        for _ in range(rng.randint(0, len(expert.trace))):
            action, _ = expert.act(world, rng)
            if action.type in ("done", "impossible") or world.step(action)[1]:
                break
        for _ in range(rng.randint(1, max_perturbations)):
            if world.ended:
                break
            world.step(random_action(world, rng))
        for _ in range(budget):
            if world.ended:
                break
            world.step(expert.act(world, rng)[0])
        if world.ended == "done" and world.success():
            done += 1
        else:
            failures[task.template] = failures.get(task.template, 0) + 1
    n = len(jobs)
    return {"completion_rate": done / n if n else 0.0, "tasks": n, "failures": dict(sorted(failures.items()))}

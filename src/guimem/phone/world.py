"""The built-in synthetic phone as an environment: ``reset`` a task, ``step`` actions, check success.

``World.reset(task, seed, variant)`` starts an episode inside the task's app (or on the
launcher, ``WorldConfig.start``) on a phone that runs variant ``variant`` of every app
(:mod:`guimem.phone.variants`); ``World.step(action)`` runs one AITW-like action
(:data:`guimem.core.data.ACTION_TYPES`) and returns the next observation.
The real-device backend (:mod:`guimem.real.device`) implements the same
:class:`~guimem.core.env.Env` protocol.

What makes memory worth having lives here, in :mod:`guimem.phone.apps` and in
:mod:`guimem.phone.tasks`:

* **app-specific paths** the goal does not spell out: dark mode is under ⋮ > Preferences >
  Display in Notes, the Settings tab > Appearance in Messages, Account > Settings >
  Appearance in Shop, ⋮ > Settings in Gallery, ⋮ > Settings > Display in Clock; and each
  **app variant** moves, renames and reorders some of it (:mod:`guimem.phone.variants`);
* **label-free icons and dense grids**: toolbar icons carry no text or description; photos
  and stickers are told apart only by their picture;
* **per-episode shuffles and themes**: list and icon-toolbar orders and the accent colour change
  between episodes while every label and glyph stays the same;
* **interruptions and dead ends**: popups (rate us, notifications, ...) that must be
  dismissed, and menu entries that lead nowhere useful.

Every task template is a sequence of subgoals from ONE library
(:data:`guimem.phone.subgoals.SUBGOAL_TYPES`);
success is checked on the hidden final state, never on pixels.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import random
from collections import OrderedDict
from typing import Any

from PIL import Image

from guimem.core.data import ENDING_TYPES, Action, UIElement
from guimem.core.env import Task, WorldObservation
from guimem.phone import apps as A
from guimem.phone.apps import APPS
from guimem.phone.catalogue import LOGICAL_SIZE
from guimem.phone.config import WorldConfig
from guimem.phone.render import THEME_ACCENTS, Theme, make_theme, render_layout
from guimem.phone.subgoals import Post
from guimem.phone.tasks import spec_of
from guimem.phone.toolkit import ROLES, Cmd, Layout, Page, PhoneState, Widget, stable_int
from guimem.phone.variants import phone_variants

W, H = LOGICAL_SIZE


POPUP_KINDS: tuple[str, ...] = tuple(A.POPUPS)


class World:
    """The synthetic phone as an environment; deterministic from ``(task, seed)``."""

    def __init__(self, config: WorldConfig | None = None, cache_size: int = 512,
                 image_cache: OrderedDict | None = None, render: bool = True):
        """``image_cache`` (an empty ``OrderedDict`` to start) lets many worlds share one bounded
        cache of rendered screens: a render key fixes the pixels, so sharing changes nothing but time.
        ``render=False``: observations carry the UI tree and screen type only (``image`` None, key ""),
        for planning on a copy of the phone (:meth:`fork`)."""
        self.config = config or WorldConfig()
        self.render = render
        self._images: OrderedDict[tuple, tuple[str, Image.Image, tuple[UIElement, ...]]] = (
            OrderedDict() if image_cache is None else image_cache)  # render key -> (hex key, image, tree)
        self._cache_size = cache_size
        self.state: PhoneState | None = None
        self.task: Task | None = None
        self.t = 0  # steps taken
        self.ended: str | None = None  # "done", "impossible", "budget" once the episode is over
        self._popup_at: int | None = None  # step after which the popup shows
        self._popup_kind = ""
        self._layout: Layout | None = None
        self.variant = 0  # the variant index every app of this phone runs

    # -- episode
    def reset(self, task: Task, seed: int, variant: int = 0) -> WorldObservation:
        """Fresh phone content, theme, shuffles and popup schedule from ``seed`` on a phone running
        variant ``variant`` of every app; start inside the task's app (or on the launcher)."""
        if not 0 <= variant < self.config.variants:
            raise ValueError(f"variant {variant} is not one of the world's {self.config.variants} variants")
        rng = random.Random(stable_int("world", seed))
        data = {key: app.init_data(rng) for key, app in APPS.items()}
        accent = rng.choice(THEME_ACCENTS) if self.config.themes else "blue"
        shuffle_seed = rng.getrandbits(32) if self.config.shuffle else None
        popup = rng.random() < self.config.dialog_prob
        self._popup_kind = rng.choice(POPUP_KINDS)
        self._popup_at = rng.randint(1, 4) if popup else None
        spec_of(task).prepare(data, task.p, rng)
        self.state = PhoneState("launcher", [Page("launcher/home")], data, accent, shuffle_seed,
                                variants=phone_variants(variant, variant in self.config.eval_variants))
        if self.config.start == "app":
            open_app(self.state, task.app)
        self.task, self.t, self.ended, self.variant = task, 0, None, variant
        return self._observe()

    def fork(self) -> "World":
        """A copy of this world now, for trying actions: no rendering, no popup to come, own state."""
        twin = World(dataclasses.replace(self.config, max_steps=10**6), render=False)  # planning has no budget
        twin.state, twin.task, twin.t, twin.ended = copy.deepcopy(self.state), self.task, self.t, self.ended
        twin.variant, twin._popup_kind = self.variant, self._popup_kind
        return twin

    def step(self, action: Action) -> tuple[WorldObservation, bool, dict[str, Any]]:
        """Run one action; the episode ends on done, impossible or answer, or when the step budget is spent."""
        if self.state is None or self.ended:
            raise RuntimeError("step() after the episode ended; call reset() first")
        self.t += 1
        effect = self._apply(action)
        if action.type in ENDING_TYPES:
            self.ended = action.type
        elif self.t >= self.config.max_steps:
            self.ended = "budget"
        self._maybe_popup()
        obs = self._observe()
        info: dict[str, Any] = {"effect": effect, "steps": self.t, "screen": obs.screen}
        if self.ended:
            info["success"] = self.success()
            info["ended"] = self.ended
        return obs, self.ended is not None, info

    def success(self) -> bool:
        """The task's check on the hidden state; an episode that declared `impossible` fails."""
        assert self.state is not None and self.task is not None
        return self.ended != "impossible" and bool(spec_of(self.task).check(self.state.data, self.task.p))

    # -- what the expert may read
    @property
    def layout(self) -> Layout:
        if self._layout is None:
            self._layout = self._build()
        return self._layout

    def holds(self, post: Post) -> bool:
        """Whether a subgoal postcondition holds now (popups are ignored)."""
        st = self.state
        kind = post[0] if post else "none"
        top = st.page if st.app != "launcher" else None
        if kind == "visible":
            return top is not None and shows(self.layout, post[1])
        if kind == "screen":
            return top is not None and st.overlay is None and top.screen == post[1]
        if kind == "page":
            return top is not None and st.overlay is None and (top.screen, top.arg) == (post[1], post[2])
        if kind == "overlay":
            return st.overlay is not None and st.overlay[0] == post[1]
        if kind == "field":
            return top is not None and top.fields.get(post[1]) == post[2]
        if kind == "task":
            return bool(spec_of(self.task).check(st.data, self.task.p))
        if kind == "no_popup":
            return st.popup is None
        return True  # "fact" and empty posts are checked by the task check at the end

    # -- internals
    def _build(self) -> Layout:
        return build_layout(self.state)

    def theme(self) -> Theme:
        st = self.state
        dark = APPS["settings"].dark(st) if st.app in ("launcher", "settings") else APPS[st.app].dark(st)
        return make_theme(st.accent, dark)

    def _observe(self) -> WorldObservation:
        self._layout = None
        if not self.render:
            return WorldObservation(None, ui_elements(self.layout), self.layout.screen, "")
        layout, theme = self.layout, self.theme()
        rkey = (layout.widgets, layout.overlay, theme, self.config.image_width)
        hit = self._images.get(rkey)
        if hit is None:
            image = render_layout(layout, theme, self.config.image_width)
            hit = (hashlib.sha256(repr(rkey).encode()).hexdigest()[:16], image, ui_elements(layout))
            self._images[rkey] = hit
            if len(self._images) > self._cache_size:
                self._images.popitem(last=False)
        else:
            self._images.move_to_end(rkey)
        return WorldObservation(hit[1], hit[2], layout.screen, hit[0])

    def _maybe_popup(self) -> None:
        st = self.state
        if self._popup_at is not None and self.t >= self._popup_at and st.app != "launcher" and not self.ended:
            st.popup, self._popup_at = self._popup_kind, None

    def _apply(self, action: Action) -> str:
        """Change the state by one action; returns a short description of what happened."""
        st, kind = self.state, action.type
        if kind in ENDING_TYPES or kind == "wait":
            return kind
        if kind == "home":
            st.app, st.stack, st.overlay, st.popup = "launcher", [Page("launcher/home")], None, None
            return "home"
        if kind == "open_app":
            app = A.APP_BY_NAME.get((action.text or "").strip().lower())
            if app is None:
                return "no such app"
            self._open(app.key)
            return f"opened {app.name}"
        if kind == "back":
            return self._back()
        if kind in ("tap", "long_press"):
            return self._touch(action)
        if kind == "swipe":
            return self._swipe(action)
        if kind == "type":
            page = st.page if st.app != "launcher" else None
            if page is None or not page.focus or st.popup or st.overlay:
                return "typed into nothing"
            page.fields[page.focus] = action.text or ""
            return f"typed into {page.focus}"
        if kind == "enter":
            if st.app != "launcher" and not st.popup and not st.overlay:
                APPS[st.app].on_enter(st)
                return "enter"
            return "enter ignored"
        raise AssertionError(kind)

    def _open(self, key: str) -> None:
        open_app(self.state, key)

    def _back(self) -> str:
        return go_back(self.state)

    def _touch(self, action: Action) -> str:
        layout = self.layout
        x, y = action.point[0] * W, action.point[1] * H
        w = layout.hit(x, y)
        if w is None:
            if layout.overlay and not layout.modal:
                self.state.overlay = None
                return "closed overlay"
            return "nothing there"
        cmd = w.long if action.type == "long_press" else w.tap
        if not cmd:
            return f"no {action.type} on {w.id}"
        self._run(cmd)
        return f"{action.type} {w.id}"

    def _swipe(self, action: Action) -> str:
        layout, st = self.layout, self.state
        (x0, y0), (x1, y1) = action.point, action.end_point()
        dx, dy = (x1 - x0) * W, (y1 - y0) * H
        box = layout.scroll_box
        if layout.overlay or box is None or abs(dy) < abs(dx) or not (box[0] <= x0 * W <= box[2] and box[1] <= y0 * H <= box[3]):
            return "swipe without effect"
        rows = max(1, round(abs(dy) / layout.scroll_step))
        page = st.page
        before = min(page.scroll, layout.scroll_max)
        page.scroll = max(0, min(layout.scroll_max, before + (rows if dy < 0 else -rows)))
        return f"scrolled {page.scroll - before:+d} rows"

    def _run(self, cmd: tuple) -> None:
        """Run a widget's command (see :mod:`guimem.phone.toolkit`)."""
        run_command(self.state, cmd, self._popup_kind)


# ----------------------------------------------------------------------------- the phone's mechanics
def build_layout(state: PhoneState) -> Layout:
    """The screen ``state`` shows: the app's page, with its overlay or the interrupting popup on top."""
    if state.app == "launcher":
        b = A.build_launcher(state)
    else:
        app = APPS[state.app]
        b = app.build(state)
        if state.popup:
            A.build_popup(b, state.popup, app.name, state)
            b.screen = f"popup/{state.popup}"
        elif state.overlay:
            app.build_overlay(b, state, *state.overlay)
            b.screen = state.overlay[0]
    return b.layout()


def shows(layout: Layout, wid: str) -> bool:
    """Whether widget ``wid`` is on this screen: reachable now, or in its list beyond the viewport."""
    return layout.find(wid) is not None or (not layout.overlay and any(w == wid for w, _ in layout.offscreen))


def open_app(state: PhoneState, key: str) -> None:
    """Open app ``key`` on its root screen (closing whatever was shown)."""
    app = APPS[key]
    state.app, state.overlay, state.popup = key, None, None
    state.stack = [app.new_page(app.root, "", state)]


def go_back(state: PhoneState) -> str:
    """The back button: dismiss the popup, close the overlay, pop the page or leave the app."""
    if state.popup:
        state.popup = None
        return "dismissed popup"
    if state.overlay:
        state.overlay = None
        return "closed overlay"
    if state.app == "launcher":
        return "nothing to go back to"
    if len(state.stack) > 1:
        state.stack.pop()
        return "back"
    state.app, state.stack = "launcher", [Page("launcher/home")]
    return "left the app"


def run_command(state: PhoneState, cmd: Cmd, popup_kind: str = "") -> None:
    """Run a widget's command on ``state`` (the commands are listed in :mod:`guimem.phone.toolkit`)."""
    kind = cmd[0]
    app = APPS.get(state.app)
    if kind == "push":
        state.overlay = None
        state.stack.append(app.new_page(cmd[1], cmd[2], state))
    elif kind == "tab":
        state.overlay = None
        state.stack = [app.new_page(cmd[1], "", state)]
    elif kind == "back":
        go_back(state)
    elif kind == "overlay":
        state.overlay = (cmd[1], cmd[2])
    elif kind == "close":
        state.overlay = None
    elif kind == "focus":
        state.page.focus = cmd[1]
    elif kind == "op":
        app.operate(state, cmd[1], *cmd[2:])
    elif kind == "open":
        open_app(state, cmd[1])
    elif kind == "dismiss":
        state.popup = None
    elif kind == "accept":
        state.popup, state.overlay = None, None
        state.stack.append(app.new_page(f"{app.key}/info", "Rate us" if popup_kind == "rate" else "Survey", state))
    elif kind != "noop":
        raise AssertionError(f"unknown command {cmd!r}")


def ui_elements(layout: Layout) -> tuple[UIElement, ...]:
    """The accessibility tree of a layout: what a touch can reach, bounds normalised to [0, 1].

    Label-free icons and picture cells get positional ids (``icon0``, ``cell3``: their order
    on this screen), so that nothing but their pixels and place tells what they are.
    """
    out, counts = [], {"icon": 0, "cell": 0}
    for w in layout.active():
        eid = w.id
        if w.kind in counts and not w.text and not w.desc:
            eid = f"{w.kind}{counts[w.kind]}"
            counts[w.kind] += 1
        e = _element(w, eid)
        if e is not None:
            out.append(e)
    return tuple(out)


@functools.lru_cache(maxsize=65536)
def _element(w: Widget, eid: str) -> UIElement | None:
    """One widget's UI-tree node with id ``eid`` (None for decoration); widgets recur, so nodes are cached."""
    role = ROLES.get(w.kind)
    if role is None:
        return None
    x0, y0, x1, y1 = w.box
    bounds = (round(max(0, x0) / W, 4), round(max(0, y0) / H, 4), round(min(W, x1) / W, 4), round(min(H, y1) / H, 4))
    return UIElement(id=eid, role=role, text=w.text, description=w.desc, bounds=bounds, clickable=w.clickable,
                     selected=w.on)


def screen_types() -> dict[str, list[str]]:
    """Every screen type per app (base screens and overlays), from the app definitions."""
    return {a.key: [f"{a.key}/{s}" for s in a.screens] + [f"{a.key}/{o}" for o in a.overlays] for a in A.APP_LIST}

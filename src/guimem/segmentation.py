"""Cutting trajectories into subgoals, annotating them, and scoring the cuts.

A *subgoal* is a contiguous run of steps with one sub-intent (the paper's memory tuple
⟨s_from, s_to; text, effect, behaviour, successor, success⟩, :class:`guimem.data.Subgoal`).
Three segmenters share one signature, ``segment(episode) -> list[Subgoal]``:

- ``rule`` (default): reads only what an agent sees — the UI trees before and after each
  action and the actions themselves. Never the ground-truth labels, the true screen type
  (``Observation.screen``), ``Episode.success`` or the provenance: it works on
  :func:`blind` copies.
- ``llm``: SmolLM2-135M-Instruct (:mod:`guimem.llm`) reads a compact textual trajectory
  (:func:`trajectory_text`: one line per step, the screen's title and the action in words)
  after two worked examples, and answers one line per subgoal, ``<first>-<last>: <intent>``
  (by default *guided*: each line is started for it). :func:`parse_llm_answer` is lenient
  about the form and strict about the meaning; an answer without a single usable range is
  *unparseable*, counted, and that episode falls back to the rule segmentation.
- ``ground_truth``: the world's :class:`~guimem.data.SubgoalLabel` runs (analysis, upper bound).

Every segmenter produces :class:`Span` s; :func:`build_subgoals` turns them into subgoals
with ``effect`` (a sentence from the UI-tree diff), ``behaviour`` (the action pattern, e.g.
``scroll x2, tap``) and ``success`` from a success judge (:mod:`guimem.judge`).

Metrics against the ground truth: boundary precision/recall/F1 (:func:`boundary_scores`;
a boundary is a step where a new subgoal starts, step 0 excluded; exact matching by
default, a tolerance optional), intent agreement (:func:`intent_agreement`) and the judge's
confusion matrix (:func:`judge_confusion`). Subgoals are stored as JSON lines
(:func:`save_subgoals`, :func:`load_subgoals`).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import textwrap
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Protocol, Sequence

import numpy as np

from guimem.data import Action, DataError, Episode, Observation, Step, Subgoal, UIElement
from guimem.describe import (
    FIELD_ROLES, describe_actions, is_labeled, region_words, swipe_direction, target_element,
)

if TYPE_CHECKING:  # pragma: no cover
    from guimem.judge import Judge
    from guimem.llm import LocalLLM

SEGMENTERS: tuple[str, ...] = ("rule", "llm", "ground_truth")

TITLE_BAND = (0.02, 0.15)  # a top-bar title lies inside this vertical band (normalized y)
OVERLAY_ROLES = frozenset({"dialog", "menu", "sheet", "popup", "alert"})  # roles of a window drawn over the screen
CHOICE_ROLES = frozenset({"toggle", "radio", "checkbox", "switch"})  # controls whose state is a setting


@dataclass(frozen=True)
class Span:
    """A proposed subgoal: steps ``first..last`` (inclusive, 0-based) and its intent text."""

    first: int
    last: int
    text: str


# ============================================================================= blind views
def blind(episode: Episode) -> Episode:
    """A copy holding only what an agent sees: no labels, true screen types, success or provenance."""

    def see(obs: Observation) -> Observation:
        return Observation(screenshot=obs.screenshot, elements=obs.elements)

    steps = tuple(Step(observation=see(s.observation), action=s.action) for s in episode.steps)
    return Episode(id=episode.id, app=episode.app, goal=episode.goal, steps=steps, final=see(episode.final))


# ============================================================================= reading a screen
def _label(element: UIElement) -> str:
    """An element's visible text, else its description, else ''."""
    return element.text.strip() or element.description.strip()


def screen_title(elements: Sequence[UIElement]) -> str:
    """The title in the top bar: the element with id ``title``, else the first non-clickable
    text lying inside :data:`TITLE_BAND`; '' when there is none."""
    for e in elements:
        if e.id == "title" and _label(e):
            return _label(e)
    for e in elements:
        if e.role == "text" and not e.clickable and e.text.strip() \
                and TITLE_BAND[0] <= e.bounds[1] and e.bounds[3] <= TITLE_BAND[1]:
            return e.text.strip()
    return ""


def overlay_panel(elements: Sequence[UIElement]) -> UIElement | None:
    """The window drawn over the screen (dialog, menu, sheet), or None."""
    return next((e for e in elements if e.role in OVERLAY_ROLES), None)


def overlay_caption(elements: Sequence[UIElement]) -> str | None:
    """None without an overlay; else its first text inside the panel, or ``'menu'`` / the role."""
    panel = overlay_panel(elements)
    if panel is None:
        return None
    inside = [e for e in elements if e is not panel and e.role == "text" and e.text.strip()
              and panel.contains(e.center)]
    if inside:
        return inside[0].text.strip()
    return "menu" if any(e.role == "menu_item" for e in elements) else panel.role


def is_home_screen(elements: Sequence[UIElement]) -> bool:
    """A launcher: untitled, with most clickable elements grid cells (app icons)."""
    clickable = [e for e in elements if e.clickable]
    return bool(clickable) and not screen_title(elements) and sum(e.role == "grid_cell" for e in clickable) * 2 > len(clickable)


@dataclass(frozen=True)
class Context:
    """Where the agent is: the screen's name and the caption of a window over it (or None)."""

    name: str
    overlay: str | None = None

    def words(self) -> str:
        """``Display``, ``Display + menu`` or ``Display + 'Delete note?' window``."""
        if self.overlay is None:
            return self.name
        return f"{self.name} + {'menu' if self.overlay == 'menu' else repr(self.overlay) + ' window'}"


UNTITLED = "an untitled screen"
HOME = "the home screen"


def screen_contexts(observations: Sequence[Observation]) -> list[Context]:
    """The context of each screen in order.

    The name is the top-bar title, ``the home screen`` for a launcher, else ``an untitled
    screen``. A window over the screen hides the screen from the UI tree, so under a window
    the name of the screen before is kept.
    """
    out: list[Context] = []
    name = UNTITLED
    for obs in observations:
        elements = obs.elements
        overlay, title = overlay_caption(elements), screen_title(elements)
        if title:
            name = title
        elif overlay is None:
            name = HOME if is_home_screen(elements) else UNTITLED
        out.append(Context(name, overlay))
    return out


def _quoted(name: str) -> str:
    """A screen name in prose: titles quoted, descriptive names (``the home screen``) as they are."""
    return name if name in (UNTITLED, HOME) else f"'{name}'"


def field_name(element: UIElement) -> str:
    """A text field's name in quotes: its hint (description), else its id; never its content."""
    return f'"{element.description.strip() or element.id}"'


def field_contents(elements: Sequence[UIElement]) -> dict[str, str]:
    """Each text field's id -> its visible content ('' when it shows only its hint)."""
    return {e.id: e.text for e in elements if e.role in FIELD_ROLES}


def choice_states(elements: Sequence[UIElement]) -> dict[str, str]:
    """Each toggle/radio id -> its state word as the UI tree exposes it (description, e.g. on/off)."""
    return {e.id: e.description.strip().lower() for e in elements if e.role in CHOICE_ROLES and e.description.strip()}


def element_name(element: UIElement, elements: Sequence[UIElement]) -> str:
    """A control's name: its label, else the label of the row it sits in (a bare switch)."""
    text = element.text.strip()
    if text:
        return text
    for other in elements:  # a bare switch at a row's end: the row carries the label
        if other is not element and other.text.strip() and other.role in ("list_item", "toggle", "text") \
                and other.bounds[1] <= element.center[1] <= other.bounds[3] and other.bounds[0] < element.bounds[0]:
            return other.text.strip()
    return element.description.strip() or f"the {element.role}"


def looks_same(a: Observation, b: Observation) -> bool:
    """Whether two screens look identical: same screenshot and same UI tree.

    Screenshots in an episode store are content-addressed (``screens/<sha>.png``), so equal
    paths mean equal pixels; with other sources, different paths simply count as a change.
    """
    return a.screenshot == b.screenshot and a.elements == b.elements


# ============================================================================= reading an episode
STEP_KINDS: tuple[str, ...] = ("effective", "noise", "scroll", "detour", "end")
"""How the rule segmenter reads a step: it changed something; it changed nothing visible; it
scrolled; it entered a screen and was backed out of (both steps), leaving the screen as it
was; it ended the episode (done / impossible)."""


@dataclass(frozen=True)
class Reading:
    """What the rule segmenter sees in an episode: contexts of its screens, kinds and targets of its steps."""

    contexts: tuple[Context, ...]  # one per observation: each step's screen, then the final one
    kinds: tuple[str, ...]  # one per step, from STEP_KINDS
    targets: tuple[UIElement | None, ...]  # the element each touch hit (None for other actions)


def read_episode(episode: Episode) -> Reading:
    """Read an episode's screens and steps (its :func:`blind` copy: labels and truth never read)."""
    ep = blind(episode)
    obs, steps, n = ep.observations, ep.steps, len(ep.steps)
    contexts = screen_contexts(obs)
    kinds: list[str] = []
    for i, step in enumerate(steps):
        if step.action.type in ("done", "impossible"):
            kinds.append("end")
        elif step.action.type == "swipe" and contexts[i + 1] == contexts[i]:
            kinds.append("scroll")
        elif looks_same(obs[i], obs[i + 1]):
            kinds.append("noise")
        else:
            kinds.append("effective")
    for i in range(n - 1):  # entered somewhere, backed out, and the screen is as it was before
        if kinds[i] == "effective" and steps[i].action.type != "back" and steps[i + 1].action.type == "back" \
                and contexts[i + 1] != contexts[i] and looks_same(obs[i], obs[i + 2]):
            kinds[i] = kinds[i + 1] = "detour"
    targets = tuple(target_element(s.action, s.elements) for s in steps)
    return Reading(tuple(contexts), tuple(kinds), targets)


# ============================================================================= annotation
_VERBS = {"tap": "tap", "long_press": "long press", "swipe": "scroll", "type": "type", "back": "back",
          "home": "home", "enter": "enter", "open_app": "open app", "done": "done", "impossible": "impossible"}


def behaviour_of(actions: Sequence[Action]) -> str:
    """The pattern of a run of actions, repeats folded: ``scroll x2, tap``."""
    parts: list[tuple[str, int]] = []
    for verb in (_VERBS[a.type] for a in actions):
        if parts and parts[-1][0] == verb:
            parts[-1] = (verb, parts[-1][1] + 1)
        else:
            parts.append((verb, 1))
    return ", ".join(verb if n == 1 else f"{verb} x{n}" for verb, n in parts)


def effect_of(before: Observation, after: Observation, ctx0: Context, ctx1: Context) -> str:
    """One sentence on what changed between two screens (their contexts and UI trees)."""
    clauses: list[str] = []
    if ctx0.name != ctx1.name:
        clauses.append(f"the screen changed from {_quoted(ctx0.name)} to {_quoted(ctx1.name)}")
    if ctx0.overlay != ctx1.overlay:
        if ctx0.overlay is not None:
            clauses.append("the menu closed" if ctx0.overlay == "menu" else f"the '{ctx0.overlay}' window closed")
        if ctx1.overlay is not None:
            clauses.append("a menu opened" if ctx1.overlay == "menu" else f"the '{ctx1.overlay}' window opened")
    if not clauses:
        by_id = {e.id: e for e in after.elements}
        fields0 = field_contents(before.elements)
        for fid, text in field_contents(after.elements).items():
            if fid in fields0 and fields0[fid] != text:
                clauses.append(f"{field_name(by_id[fid])} now reads '{text}'" if text
                               else f"{field_name(by_id[fid])} was cleared")
        states0 = choice_states(before.elements)
        for cid, state in choice_states(after.elements).items():
            if cid in states0 and states0[cid] != state:
                clauses.append(f"'{element_name(by_id[cid], after.elements)}' switched {state}")
        if not clauses:
            labels0 = {_label(e) for e in before.elements if _label(e)}
            labels1 = {_label(e) for e in after.elements if _label(e)}
            new, gone = len(labels1 - labels0), len(labels0 - labels1)
            if new or gone:
                clauses.append(f"the content of {_quoted(ctx1.name)} changed ({new} new, {gone} gone)")
            elif not looks_same(before, after):
                clauses.append(f"{_quoted(ctx1.name)} looks different (same UI tree)")
    if not clauses:
        return NO_CHANGE
    sentence = "; ".join(clauses[:3])
    return sentence[0].upper() + sentence[1:] + "."


NO_CHANGE = "Nothing visible changed."


def _touch_name(target: UIElement | None, step: Step) -> str:
    """``'Delete'``, ``the unlabeled icon at top right`` or ``the screen at center``."""
    if target is None:
        return f"the screen at {region_words(step.action.point)}"
    if is_labeled(target):
        return f"'{_label(target)}'"
    return f"the unlabeled {target.role} at {region_words(target.center)}"


def _tap_intent(step: Step, target: UIElement | None, ctx0: Context, ctx1: Context, after: Observation) -> str:
    """The intent of a tap or long press, judged by what it hit and what followed."""
    verb = "long press" if step.action.type == "long_press" else "tap"
    if target is not None and target.role in CHOICE_ROLES:
        name = element_name(target, step.elements)
        if target.role == "radio":
            return f"choose '{name}'"
        state = choice_states(after.elements).get(target.id)
        return f"turn {state} '{name}'" if state in ("on", "off") else f"toggle '{name}'"
    if ctx0.overlay is not None and ctx1.overlay != ctx0.overlay:
        if ctx0.overlay == "menu":
            return f"choose {_touch_name(target, step)} in the menu"
        return f"answer the '{ctx0.overlay}' window with {_touch_name(target, step)}"
    if ctx1.name != ctx0.name:
        return f"open {ctx1.name}" if ctx1.name in (UNTITLED, HOME) else f"open the {ctx1.name} screen"
    if ctx1.overlay is not None and ctx1.overlay != ctx0.overlay:
        return "open the menu" if ctx1.overlay == "menu" else f"open the '{ctx1.overlay}' window"
    if target is not None and target.role in FIELD_ROLES:
        return f"focus {field_name(target)}"
    return f"{verb} {_touch_name(target, step)}"


def span_intent(episode: Episode, first: int, last: int, reading: Reading | None = None) -> str:
    """The sub-intent of steps ``first..last``, from their most telling step.

    Typing wins (``type 'milk' into "Search" and submit``); else the last effective step
    (what it opened, switched or chose); else the last step of any kind.
    """
    ep = blind(episode)
    r = reading or read_episode(ep)
    obs, idx = ep.observations, range(first, last + 1)
    typed = [i for i in idx if ep.steps[i].action.type == "type"]
    if typed:
        i = typed[-1]
        fields = [r.targets[j] for j in range(first, i) if r.targets[j] is not None and r.targets[j].role in FIELD_ROLES]
        box = fields[-1] if fields else next((e for e in ep.steps[i].elements if e.role in FIELD_ROLES), None)
        into = f" into {field_name(box)}" if box is not None else ""
        submit = " and submit" if any(ep.steps[j].action.type == "enter" for j in idx if j > i) else ""
        return f"type '{ep.steps[i].action.text}'{into}{submit}"
    effective = [i for i in idx if r.kinds[i] == "effective"]
    i = effective[-1] if effective else last
    step, ctx0, ctx1 = ep.steps[i], r.contexts[i], r.contexts[i + 1]
    a = step.action
    if a.type in ("tap", "long_press"):
        text = _tap_intent(step, r.targets[i], ctx0, ctx1, obs[i + 1])
        repeats = sum(1 for j in effective if r.targets[j] is not None and r.targets[j] == r.targets[i])
        return f"{text} {repeats} times" if repeats > 1 and text.startswith(("tap", "long press")) else text
    if a.type == "swipe":
        return f"scroll {swipe_direction(a)} on {_quoted(ctx0.name)}"
    if a.type == "back":
        if ctx0.overlay is not None and ctx1.overlay is None:
            return "close the menu" if ctx0.overlay == "menu" else f"close the '{ctx0.overlay}' window"
        return f"go back to {_quoted(ctx1.name)}"
    if a.type == "enter":
        return "submit the text"
    if a.type == "home":
        return "go to the home screen"
    if a.type == "open_app":
        return f"open the {a.text} app"
    if a.type == "done":
        return "finish the task"
    return "give up on the task"  # impossible


# ============================================================================= spans -> subgoals
def check_spans(spans: Sequence[Span], n_steps: int, episode_id: str = "") -> None:
    """Raise :class:`DataError` unless ``spans`` tile steps ``0..n_steps-1`` in order."""
    expected = 0
    for i, span in enumerate(spans):
        if span.first != expected or span.last < span.first:
            raise DataError(f"spans[{i}]", f"episode {episode_id!r}: expected a span starting at step {expected}, "
                            f"got {span.first}..{span.last}")
        expected = span.last + 1
    if expected != n_steps:
        raise DataError("spans", f"episode {episode_id!r}: spans cover steps 0..{expected - 1} "
                        f"but the episode has {n_steps} steps")


def spans_from_starts(starts: Iterable[int], n_steps: int, texts: Mapping[int, str] | None = None) -> list[Span]:
    """Spans tiling ``0..n_steps-1`` that begin at ``starts`` (0 added, out-of-range dropped)."""
    cut = sorted({0} | {s for s in starts if 0 < s < n_steps})
    ends = cut[1:] + [n_steps]
    return [Span(s, e - 1, (texts or {}).get(s, "")) for s, e in zip(cut, ends)]


def build_subgoals(episode: Episode, spans: Sequence[Span], verdicts: Sequence[str]) -> list[Subgoal]:
    """Subgoals for ``spans`` of ``episode`` with effect, behaviour, successor and the judge's ``verdicts``."""
    check_spans(spans, len(episode.steps), episode.id)
    if len(verdicts) != len(spans):
        raise DataError("verdicts", f"{len(verdicts)} verdicts for {len(spans)} spans of episode {episode.id!r}")
    obs = episode.observations
    contexts = screen_contexts(obs)
    subgoals = []
    for i, (span, verdict) in enumerate(zip(spans, verdicts)):
        a, b = span.first, span.last + 1
        actions = tuple(s.action for s in episode.steps[a:b])
        subgoals.append(Subgoal(
            episode_id=episode.id, index=i, first_step=span.first, last_step=span.last,
            from_screenshot=obs[a].screenshot, to_screenshot=obs[b].screenshot, text=span.text,
            effect=effect_of(obs[a], obs[b], contexts[a], contexts[b]), behaviour=behaviour_of(actions),
            success=verdict, successor=i + 1 if i + 1 < len(spans) else None,
            goal=episode.goal, app=episode.app, actions=actions))
    return subgoals


# ============================================================================= segmenters
class Segmenter(Protocol):
    """Proposes spans for an episode; :meth:`segment` adds annotations and verdicts."""

    name: str

    def spans(self, episode: Episode) -> list[Span]:
        """The episode cut into spans tiling all of its steps."""
        ...

    def segment(self, episode: Episode) -> list[Subgoal]:
        """The episode's subgoals, annotated and judged."""
        ...


class _Base:
    """Shared :meth:`segment`: spans from the subclass, verdicts from the judge."""

    name = ""

    def __init__(self, judge: "Judge | None" = None):
        if judge is None:
            from guimem.judge import RuleJudge  # judge imports this module's screen reading

            judge = RuleJudge()
        self.judge = judge

    def spans(self, episode: Episode) -> list[Span]:  # pragma: no cover - abstract
        raise NotImplementedError

    def segment(self, episode: Episode) -> list[Subgoal]:
        """The episode's subgoals, annotated, with the judge's per-subgoal verdicts."""
        spans = self.spans(episode)
        verdicts = self.judge.judge(blind(episode), [(s.first, s.last) for s in spans])
        return build_subgoals(episode, spans, verdicts.subgoals)


class GroundTruthSegmenter(_Base):
    """Spans from the world's :class:`~guimem.data.SubgoalLabel` runs (analysis only)."""

    name = "ground_truth"

    def spans(self, episode: Episode) -> list[Span]:
        """One span per run of equal label index; every step must carry a label."""
        spans: list[Span] = []
        for i, step in enumerate(episode.steps):
            if step.subgoal is None:
                raise DataError(f"steps[{i}].subgoal", f"episode {episode.id!r} has an unlabelled step; "
                                "the ground-truth segmenter needs every step labelled")
            if spans and episode.steps[spans[-1].first].subgoal.index == step.subgoal.index:
                spans[-1] = replace(spans[-1], last=i)
            else:
                spans.append(Span(i, i, step.subgoal.text))
        return spans


def _continues(ep: Episode, r: Reading, i: int, j: int) -> bool:
    """Whether effective step ``i`` continues the subgoal of the effective step ``j`` before it
    (only noise between them): typing after its field tap, enter after typing, the same control pressed again."""
    steps, a = ep.steps, ep.steps[i].action
    prev = steps[j].action
    if a.type == "enter":
        return prev.type == "type"
    if a.type == "type":
        if prev.type == "type" or (r.targets[j] is not None and r.targets[j].role in FIELD_ROLES):
            return True
        run_end = i
        while run_end + 1 < len(steps) and steps[run_end + 1].action.type == "type":
            run_end += 1
        submitted = run_end + 1 < len(steps) and steps[run_end + 1].action.type == "enter"
        return prev.type == "tap" and submitted  # open search, type, submit: one search
    if a.type in ("tap", "long_press") and prev.type == a.type:  # pressing the same control again
        same = r.targets[i] is not None and r.targets[i] == r.targets[j]
        return same and r.contexts[j] == r.contexts[i] == r.contexts[i + 1]
    return False


def rule_spans(episode: Episode) -> list[Span]:
    """Cut an episode by what its steps did to the screen (see :class:`RuleSegmenter`)."""
    ep = blind(episode)
    r = read_episode(ep)
    groups: list[list[int]] = []
    pending: list[int] = []  # noise, scrolls and detours waiting for the step they led to
    for i, kind in enumerate(r.kinds):
        only_noise = all(r.kinds[k] == "noise" for k in pending)
        if kind in ("noise", "scroll", "detour"):
            pending.append(i)
        elif kind == "end" and ep.steps[i].action.type == "done" and groups:
            groups[-1].extend(pending + [i])
            pending = []
        elif kind == "effective" and groups and only_noise and _continues(ep, r, i, groups[-1][-1]):
            groups[-1].extend(pending + [i])
            pending = []
        else:
            groups.append(pending + [i])
            pending = []
    if pending:
        groups.append(pending)
    return [Span(g[0], g[-1], span_intent(ep, g[0], g[-1], r)) for g in groups]


class RuleSegmenter(_Base):
    """Boundaries from the screens and the actions only (never the labels or the true screen types).

    Each step is read as *effective* (the screen changed), *noise* (nothing visible
    changed), a *scroll*, part of a *detour* (it entered a screen or menu and a ``back``
    left the screen exactly as before) or the *end* (``done``/``impossible``). A subgoal
    ends with an effective step: noise, scrolls and detours join the effective step that
    follows them; typing and ``enter`` join the field tap (or the search opened) before them;
    pressing the same control again joins the previous press (noise in between is absorbed);
    ``done`` joins the last subgoal, while ``impossible`` gives up on a new one. A scroll
    after which a window appears counts as effective. Leftover noise at the end of an
    episode (wandering) forms its own subgoal.
    """

    name = "rule"

    def spans(self, episode: Episode) -> list[Span]:
        """The episode's rule spans with their intents."""
        return rule_spans(episode)


# ============================================================================= the LLM segmenter
LLM_SYSTEM_PROMPT = (
    "You split a phone agent's trajectory into subgoals. A subgoal is a run of consecutive steps "
    "with one purpose, such as opening a screen, typing into a field, or changing a setting. "
    "Answer with one line per subgoal, in order, covering every step exactly once:\n"
    "<first step>-<last step>: <the subgoal in a few words>"
)
"""The system turn of the segmentation prompt."""

LLM_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("""Goal: send "hi" to Bob
Steps:
1. [Chats] tap an unlabeled icon at top right
2. [Search] type "Bob" into "Search"
3. [Search] tap "Bob" (list_item)
4. [Bob] tap "Message" (field)
5. [Bob] type "hi" into "Message"
6. [Bob] tap an unlabeled icon at bottom right
7. [Bob] done
End: [Bob]""",
     """1-3: open the chat with Bob
4-5: type the message "hi"
6-7: send the message"""),
    ("""Goal: Turn off Wi-Fi
Steps:
1. [the home screen] tap "Settings" (grid_cell)
2. [the home screen + 'Allow notifications?' window] tap "Don't allow" (button)
3. [Settings] swipe up on the list
4. [Settings] tap "Network" (list_item)
5. [Network] tap "Wi-Fi" (toggle)
6. [Network] done
End: [Network]""",
     """1-1: open Settings
2-2: dismiss the popup
3-4: open the Network page
5-6: turn off Wi-Fi"""),
)
"""Worked examples shown before the real trajectory (few-shot prompting): trajectory, answer."""


def trajectory_text(episode: Episode) -> str:
    """The compact trajectory the LLM reads: goal, one line per step (``[screen] action``), end screen."""
    ep = blind(episode)
    phrases = describe_actions([s.action for s in ep.steps], [s.elements for s in ep.steps])
    contexts = screen_contexts(ep.observations)
    lines = [f"Goal: {ep.goal}", "Steps:"]
    for k, (ctx, phrase) in enumerate(zip(contexts, phrases), start=1):
        lines.append(f"{k}. [{ctx.words()}] {phrase}")
    lines.append(f"End: [{contexts[-1].words()}]")
    return "\n".join(lines)


def segmentation_prompt(episode: Episode) -> list[dict[str, str]]:
    """The chat messages asking the LLM to segment ``episode`` (system, worked examples, trajectory)."""
    messages = [{"role": "system", "content": LLM_SYSTEM_PROMPT}]
    for trajectory, answer in LLM_EXAMPLES:
        messages += [{"role": "user", "content": trajectory}, {"role": "assistant", "content": answer}]
    return messages + [{"role": "user", "content": trajectory_text(episode)}]


_NUM_START, _NUM_END = r"(?<!\d)(?<!\d[.:])", r"(?!\d|[.:]\d)"  # not inside 6:40 or 4.2.1
_RANGE = re.compile(rf"(?:\bsteps?\s*)?{_NUM_START}(\d{{1,3}})\s*(?:-|–|—|\bto\b|\.\.|\bthrough\b)\s*(\d{{1,3}}){_NUM_END}",
                    re.I)
_SINGLE = re.compile(rf"\bsteps?\s*#?\s*(\d{{1,3}}){_NUM_END}", re.I)
_LINE_PREFIX = re.compile(r"^\s*(?:[-*•>#]+\s*|(?:subgoal|segment|part)\s*#?\d+\s*[:.)-]?\s*)", re.I)
_TRIM = " \t:;,.-–—()[]{}\"'`*"


@dataclass(frozen=True)
class ParsedAnswer:
    """What :func:`parse_llm_answer` made of an answer.

    ``status`` is ``ok`` (the lines tile every step in order), ``repaired`` (usable after fixes
    listed in ``problems``) or ``unparseable`` (no usable range; ``spans`` is empty).
    """

    spans: tuple[Span, ...]
    status: str
    problems: tuple[str, ...] = ()


def _parse_line(line: str) -> tuple[int, int, str] | None:
    """(first, last, intent) from one answer line (1-based steps), or None."""
    body = _LINE_PREFIX.sub("", line)
    m = _RANGE.search(body)
    if m is not None:
        first, last = int(m.group(1)), int(m.group(2))
    else:
        m = _SINGLE.search(body)
        if m is None:
            return None
        first = last = int(m.group(1))
    intent = (body[m.end():].strip(_TRIM) or body[:m.start()].strip(_TRIM))
    return first, last, re.sub(r"\s+", " ", intent)


def parse_llm_answer(answer: str, n_steps: int) -> ParsedAnswer:
    """Spans (0-based) from an LLM answer about a trajectory of ``n_steps`` steps.

    Lenient about form: bullets, ``Subgoal 2:`` prefixes, ``steps 3-5``, ``3 to 5``, ``3–5``,
    ``Step 6:`` and an intent before or after the range are all read. Strict about meaning:
    reversed ranges are flipped, ranges past the last step clipped or dropped, and the
    boundaries are the distinct first steps; a missing intent is left '' (the caller fills
    it). Each fix is named in ``problems``. No usable range at all: ``unparseable``.
    """
    found: list[tuple[int, int, str]] = []
    problems: list[str] = []
    for line in answer.splitlines():
        parsed = _parse_line(line)
        if parsed is None:
            if line.strip():
                problems.append(f"ignored line {line.strip()[:60]!r}")
            continue
        first, last, intent = parsed
        if first > last:
            problems.append(f"reversed range {first}-{last}")
            first, last = last, first
        if first < 1 or first > n_steps:
            problems.append(f"range {first}-{last} outside steps 1-{n_steps}")
            continue
        if last > n_steps:
            problems.append(f"range {first}-{last} clipped to {n_steps}")
            last = n_steps
        found.append((first, last, intent))
    if not found:
        return ParsedAnswer((), "unparseable", tuple(problems) or ("no step range found",))
    expected, tiles = 1, True
    for first, last, _ in found:
        tiles &= first == expected
        expected = last + 1
    if not (tiles and expected == n_steps + 1):
        problems.append("ranges do not tile the steps in order; boundaries taken from their first steps")
    texts: dict[int, str] = {}
    for first, _, intent in found:
        texts.setdefault(first - 1, intent)
    if 0 not in texts:
        problems.append("no range starts at step 1")
    spans = spans_from_starts(texts, n_steps, texts)
    if any(not s.text for s in spans):
        problems.append("missing intent")
    return ParsedAnswer(tuple(spans), "repaired" if problems else "ok", tuple(problems))


def answer_complete(answer: str, n_steps: int) -> bool:
    """Whether an answer already has a range reaching the last step (generation may stop)."""
    return any(p is not None and max(p[0], p[1]) >= n_steps for p in map(_parse_line, answer.splitlines()))


@dataclass
class LLMRecord:
    """One LLM call: the episode, the raw answer, its parse status and problems, and the time it took."""

    episode_id: str
    answer: str
    status: str
    problems: tuple[str, ...]
    seconds: float
    prompt_tokens: int


@dataclass
class LLMStats:
    """Every call of an :class:`LLMSegmenter`, for counting unparseable answers and timing."""

    records: list[LLMRecord] = field(default_factory=list)

    def count(self, status: str) -> int:
        """How many answers had ``status`` (ok, repaired, unparseable)."""
        return sum(r.status == status for r in self.records)

    @property
    def seconds_per_episode(self) -> float:
        """Mean generation time per episode (0.0 before any call)."""
        return float(np.mean([r.seconds for r in self.records])) if self.records else 0.0

    def summary(self) -> dict[str, int]:
        """Counts of episodes and of each status (deterministic: no times)."""
        return {"episodes": len(self.records), "ok": self.count("ok"), "repaired": self.count("repaired"),
                "unparseable": self.count("unparseable")}


LLM_MODES: tuple[str, ...] = ("guided", "free")


class LLMSegmenter(_Base):
    """Boundaries and intents proposed by a local LLM; an unparseable answer falls back to :func:`rule_spans`.

    Two ways of asking (``mode``):

    - ``guided`` (default): the answer is written line by line. Each line is started for the
      model as ``"<next step>-"`` (the step after the previous line's end) and the model
      writes the rest: where the subgoal ends and what it is. Overlaps cannot happen, and
      generation stops at each line's end. A line whose end cannot be read, or lies before its
      start, ends the answer there.
    - ``free``: the model writes the whole answer; generation stops once a line reaches the
      last step. Small models tend to answer with overlapping windows (``1-3``, ``2-4``, ...).

    Either way the answer goes through :func:`parse_llm_answer`; intents the LLM left empty
    are filled with the rule intent of the same span. Every call is recorded in :attr:`stats`
    (raw answer, status, problems, seconds).
    """

    name = "llm"

    def __init__(self, llm: "LocalLLM", judge: "Judge | None" = None, mode: str = "guided",
                 tokens_per_line: int = 20, max_new_tokens: int = 256):
        super().__init__(judge)
        if mode not in LLM_MODES:
            raise DataError("mode", f"unknown LLM segmentation mode {mode!r}; expected one of {LLM_MODES}")
        self.llm, self.mode = llm, mode
        self.tokens_per_line, self.max_new_tokens = tokens_per_line, max_new_tokens
        self.stats = LLMStats()

    def _answer_free(self, messages: list[dict[str, str]], n: int) -> str:
        """The whole answer in one generation."""
        budget = min(self.max_new_tokens, 8 + self.tokens_per_line * n)
        return self.llm.generate(messages, max_new_tokens=budget, stop=lambda text: answer_complete(text, n))

    def _answer_guided(self, messages: list[dict[str, str]], n: int) -> str:
        """The answer line by line, each line started as ``"<next step>-"`` for the model."""
        answer, first = self.llm.start(messages), 1
        lines: list[str] = []
        while first <= n:
            head = f"{first}-"
            answer.write(head)
            line = head + answer.generate(self.tokens_per_line).split("\n", 1)[0]
            lines.append(line)
            if not answer.text.endswith("\n"):
                answer.write("\n")
            parsed = _parse_line(line)
            if parsed is None or parsed[1] < first:
                break  # the format broke: the answer so far is parsed as it is
            first = parsed[1] + 1
        return "".join(f"{line}\n" for line in lines)

    def spans(self, episode: Episode) -> list[Span]:
        """Ask the LLM; parse; fall back to the rule spans when nothing usable came back."""
        ep, n = blind(episode), len(episode.steps)
        messages = segmentation_prompt(ep)
        start = time.perf_counter()
        answer = self._answer_guided(messages, n) if self.mode == "guided" else self._answer_free(messages, n)
        seconds = time.perf_counter() - start
        parsed = parse_llm_answer(answer, n)
        self.stats.records.append(LLMRecord(episode.id, answer, parsed.status, parsed.problems, seconds,
                                            self.llm.count_tokens(messages)))
        if parsed.status == "unparseable":
            return rule_spans(ep)
        return [s if s.text else replace(s, text=span_intent(ep, s.first, s.last)) for s in parsed.spans]


# ============================================================================= choosing and running
def make_segmenter(name: str, judge: "Judge | None" = None, llm: "LocalLLM | None" = None,
                   llm_mode: str = "guided") -> Segmenter:
    """The segmenter called ``name`` (one of :data:`SEGMENTERS`); ``llm`` (loaded when None) and
    ``llm_mode`` are for ``llm``."""
    if name == "rule":
        return RuleSegmenter(judge)
    if name == "ground_truth":
        return GroundTruthSegmenter(judge)
    if name == "llm":
        if llm is None:
            from guimem.llm import load_llm

            llm = load_llm()
        return LLMSegmenter(llm, judge, mode=llm_mode)
    raise DataError("segmenter", f"unknown segmenter {name!r}; expected one of {SEGMENTERS}")


def segment_episodes(episodes: Sequence[Episode], segmenter: Segmenter, progress: bool = True) -> list[Subgoal]:
    """All subgoals of ``episodes``, in episode order, from one segmenter."""
    from tqdm import tqdm

    out: list[Subgoal] = []
    for episode in tqdm(episodes, desc=f"segment ({segmenter.name})", disable=not progress):
        out.extend(segmenter.segment(episode))
    return out


def group_by_episode(subgoals: Iterable[Subgoal]) -> dict[str, list[Subgoal]]:
    """Subgoals grouped by episode id, each group sorted by index (insertion order of episodes kept)."""
    groups: dict[str, list[Subgoal]] = {}
    for sg in subgoals:
        groups.setdefault(sg.episode_id, []).append(sg)
    return {k: sorted(v, key=lambda s: s.index) for k, v in groups.items()}


# ============================================================================= metrics
def boundaries(parts: Sequence[Span | Subgoal]) -> list[int]:
    """The steps where a new subgoal starts, step 0 excluded (it always starts one)."""
    firsts = [p.first if isinstance(p, Span) else p.first_step for p in parts]
    return sorted({f for f in firsts if f > 0})


def match_boundaries(pred: Sequence[int], true: Sequence[int], tolerance: int = 0) -> int:
    """The most one-to-one pairs (p, t) with ``|p - t| <= tolerance``.

    Greedy in order (each predicted boundary takes the earliest free true boundary within
    reach), which is optimal for intervals of equal width on a line. With ``tolerance=0``
    this is the size of the intersection of the two sets.
    """
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    true_sorted, j, hits = sorted(set(true)), 0, 0
    for p in sorted(set(pred)):
        while j < len(true_sorted) and true_sorted[j] < p - tolerance:
            j += 1
        if j < len(true_sorted) and true_sorted[j] <= p + tolerance:
            hits, j = hits + 1, j + 1
    return hits


@dataclass(frozen=True)
class BoundaryScores:
    """Boundary precision, recall and F1 with the counts behind them.

    Conventions for empty sets: no predicted boundaries gives precision 1 when there are no
    true ones either, else 0; no true boundaries gives recall 1 when none were predicted,
    else 0. F1 is 0 when precision + recall is 0.
    """

    tp: int
    n_pred: int
    n_true: int

    @property
    def precision(self) -> float:
        return self.tp / self.n_pred if self.n_pred else float(self.n_true == 0)

    @property
    def recall(self) -> float:
        return self.tp / self.n_true if self.n_true else float(self.n_pred == 0)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: "BoundaryScores") -> "BoundaryScores":
        return BoundaryScores(self.tp + other.tp, self.n_pred + other.n_pred, self.n_true + other.n_true)

    def to_dict(self) -> dict[str, float | int]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "tp": self.tp, "n_pred": self.n_pred, "n_true": self.n_true}


def boundary_scores(pred: Sequence[int], true: Sequence[int], tolerance: int = 0) -> BoundaryScores:
    """Scores of one episode's predicted boundaries against the true ones (see :func:`match_boundaries`)."""
    return BoundaryScores(match_boundaries(pred, true, tolerance), len(set(pred)), len(set(true)))


def corpus_boundary_scores(pred: Mapping[str, Sequence[Span | Subgoal]], true: Mapping[str, Sequence[Span | Subgoal]],
                           tolerance: int = 0) -> BoundaryScores:
    """Micro-averaged scores over the episodes in ``pred`` (counts summed, then the ratios).

    Raises :class:`DataError` when an episode of ``pred`` has no ground truth in ``true``.
    """
    total = BoundaryScores(0, 0, 0)
    for eid, parts in pred.items():
        if eid not in true:
            raise DataError("episode_id", f"no ground-truth segmentation for episode {eid!r}")
        total = total + boundary_scores(boundaries(parts), boundaries(true[eid]), tolerance)
    return total


def _bounds(part: Span | Subgoal) -> tuple[int, int]:
    return (part.first, part.last) if isinstance(part, Span) else (part.first_step, part.last_step)


def step_intents(parts: Sequence[Span | Subgoal]) -> list[str]:
    """The intent text of each step (index = step) under a segmentation."""
    out: list[str] = []
    for part in parts:
        first, last = _bounds(part)
        out.extend([part.text] * (last - first + 1))
    return out


def intent_agreement(pred: Mapping[str, Sequence[Span | Subgoal]], true: Mapping[str, Sequence[Span | Subgoal]],
                     embedder) -> float:
    """Step-weighted mean cosine between the predicted and the true intent of every step.

    Each step contributes the cosine between the text of the predicted subgoal holding it and
    that of the true subgoal holding it, so a pair of overlapping segments counts in
    proportion to their overlap. ``embedder.embed(texts)`` must return unit rows ``[n, dim]``.
    Returns NaN when there are no steps.
    """
    pairs: list[tuple[str, str]] = []
    for eid, parts in pred.items():
        if eid not in true:
            raise DataError("episode_id", f"no ground-truth segmentation for episode {eid!r}")
        p, t = step_intents(parts), step_intents(true[eid])
        if len(p) != len(t):
            raise DataError("last_step", f"episode {eid!r}: {len(p)} predicted steps but {len(t)} true ones")
        pairs.extend(zip(p, t))
    if not pairs:
        return float("nan")
    texts = sorted({x for pair in pairs for x in pair})
    vectors = np.asarray(embedder.embed(texts), dtype=np.float64)  # [n_texts, dim], unit rows
    index = {x: i for i, x in enumerate(texts)}
    cos = [float(vectors[index[a]] @ vectors[index[b]]) for a, b in pairs]
    return float(np.mean(cos))


JUDGE_VERDICTS: tuple[str, ...] = ("yes", "no", "uncertain")  # rows of the judge's confusion matrix
JUDGE_TRUTHS: tuple[bool, ...] = (True, False)  # its columns


@dataclass(frozen=True)
class JudgeScores:
    """The judge's episode verdicts against the true outcome.

    ``matrix[i][j]`` counts episodes with verdict ``JUDGE_VERDICTS[i]`` and outcome
    ``JUDGE_TRUTHS[j]``. ``accuracy`` counts an ``uncertain`` verdict as wrong;
    ``decided_accuracy`` is over yes/no verdicts only; ``coverage`` is their share.
    Episodes whose outcome is unknown (None) are left out.
    """

    matrix: tuple[tuple[int, int], ...]

    @property
    def n(self) -> int:
        return sum(map(sum, self.matrix))

    @property
    def correct(self) -> int:
        return self.matrix[0][0] + self.matrix[1][1]

    @property
    def decided(self) -> int:
        return sum(self.matrix[0]) + sum(self.matrix[1])

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else float("nan")

    @property
    def decided_accuracy(self) -> float:
        return self.correct / self.decided if self.decided else float("nan")

    @property
    def coverage(self) -> float:
        return self.decided / self.n if self.n else float("nan")

    def to_dict(self) -> dict:
        """Accuracies rounded to 4 places, the counts, and the matrix with its row and column names."""
        return {"accuracy": round(self.accuracy, 4), "decided_accuracy": round(self.decided_accuracy, 4),
                "coverage": round(self.coverage, 4), "n": self.n, "rows": list(JUDGE_VERDICTS),
                "columns": ["success", "failure"], "matrix": [list(r) for r in self.matrix]}


def judge_confusion(verdicts: Sequence[str], outcomes: Sequence[bool | None]) -> JudgeScores:
    """The 3x2 confusion of episode verdicts (yes/no/uncertain) against true outcomes."""
    if len(verdicts) != len(outcomes):
        raise ValueError(f"{len(verdicts)} verdicts but {len(outcomes)} outcomes")
    counts = Counter((v, o) for v, o in zip(verdicts, outcomes) if o is not None)
    for v, _ in counts:
        if v not in JUDGE_VERDICTS:
            raise DataError("success", f"unknown verdict {v!r}; expected one of {JUDGE_VERDICTS}")
    return JudgeScores(tuple(tuple(counts[(v, o)] for o in JUDGE_TRUTHS) for v in JUDGE_VERDICTS))


# ============================================================================= storage
def save_subgoals(path: str | Path, subgoals: Iterable[Subgoal]) -> None:
    """Write subgoals as JSON lines, atomically (a temp file in the same folder, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for sg in subgoals:
                f.write(json.dumps(sg.to_dict(), ensure_ascii=False, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_subgoals(path: str | Path) -> list[Subgoal]:
    """Read a JSON-lines file of subgoals; a bad line raises :class:`DataError` naming file, line and field."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataError("path", "no such file", str(path)) from None
    out: list[Subgoal] = []
    seen: set[str] = set()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}, line {lineno}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError("line", f"invalid JSON ({err.msg} at column {err.colno})", where) from None
        sg = Subgoal.from_dict(raw, path=where)
        if sg.id in seen:
            raise DataError("index", f"duplicate subgoal {sg.id!r}", where)
        seen.add(sg.id)
        out.append(sg)
    return out


# ============================================================================= reports and figures
def sample_evenly(items: Sequence, k: int) -> list:
    """``k`` items spread evenly over ``items`` (all of them when ``k >= len(items)``; none when ``k <= 0``)."""
    n = len(items)
    if k <= 0 or n == 0:
        return []
    if k >= n:
        return list(items)
    return [items[(i * n) // k] for i in range(k)]


def every_step_spans(episode: Episode) -> list[Span]:
    """The trivial segmentation with a boundary before every step (a reference for the metrics)."""
    return [Span(i, i, "") for i in range(len(episode.steps))]


def score_segmentation(pred: Mapping[str, Sequence[Span | Subgoal]], true: Mapping[str, Sequence[Span | Subgoal]],
                       embedder=None, tolerance: int = 0) -> dict[str, float | int]:
    """Boundary precision/recall/F1 (micro) and, with an embedder, intent agreement, rounded to 4 places."""
    out: dict[str, float | int] = {"episodes": len(pred)}
    out.update({k: round(v, 4) if isinstance(v, float) else v
                for k, v in corpus_boundary_scores(pred, true, tolerance).to_dict().items()})
    if embedder is not None:
        out["intent_agreement"] = round(intent_agreement(pred, true, embedder), 4)
    return out


def draw_boundaries(episode: Episode, segmentations: Mapping[str, Sequence[Span | Subgoal]]):
    """A figure: one row per segmentation of ``episode``, its subgoals as coloured runs of steps
    with their intents, the steps' actions along the bottom."""
    import matplotlib.pyplot as plt

    n = len(episode.steps)
    rows = list(segmentations.items())
    fig, ax = plt.subplots(figsize=(max(6.4, 0.75 * n + 2.5), 0.9 * len(rows) + 1.6))
    palette = plt.get_cmap("tab20").colors
    for r, (name, parts) in enumerate(rows):
        y = len(rows) - 1 - r
        for k, part in enumerate(parts):
            first, last = _bounds(part)
            ax.barh(y, last - first + 1, left=first - 0.5, height=0.7, color=palette[k % len(palette)],
                    edgecolor="white", linewidth=2)
            label = textwrap.fill(part.text, width=max(8, 12 * (last - first + 1)), max_lines=3, placeholder="…")
            ax.text((first + last) / 2, y, label, ha="center", va="center", fontsize=7, clip_on=True)
        for b in boundaries(parts):
            ax.plot([b - 0.5, b - 0.5], [y - 0.42, y + 0.42], color="black", linewidth=2)
    verbs = [behaviour_of([s.action]) for s in episode.steps]
    ax.set_yticks(range(len(rows)), [name for name, _ in reversed(rows)])
    ax.set_xticks(range(n), [f"{i}\n{v}" for i, v in enumerate(verbs)], fontsize=7)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_xlabel("step and action")
    ax.grid(False)
    ax.set_title(f"{episode.id}: {episode.goal}", fontsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def draw_judge_confusion(scores: Mapping[str, JudgeScores]):
    """A figure: the judge's 3x2 confusion matrix (verdict vs true outcome), one panel per split."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(scores), figsize=(3.2 * len(scores) + 0.4, 3.4), squeeze=False)
    for ax, (name, s) in zip(axes[0], scores.items()):
        m = np.array(s.matrix, dtype=float)  # [3 verdicts, 2 outcomes]
        ax.imshow(m, cmap="Blues", vmin=0, vmax=max(1.0, m.max()))
        ax.grid(False)
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                ax.text(j, i, f"{int(m[i, j])}", ha="center", va="center",
                        color="white" if m[i, j] > 0.6 * m.max() else "black")
        ax.set_xticks([0, 1], ["success", "failure"])
        ax.set_yticks([0, 1, 2], list(JUDGE_VERDICTS))
        ax.set_xlabel("true outcome")
        ax.set_title(f"{name}: accuracy {s.accuracy:.2f}\n(decided {s.decided_accuracy:.2f}, coverage {s.coverage:.2f})",
                     fontsize=8)
    axes[0][0].set_ylabel("judge verdict")
    fig.tight_layout()
    return fig

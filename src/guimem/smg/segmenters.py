"""Segmenters that cut a trajectory into subgoals from what an agent sees (rules) or from labels.

Every segmenter produces :class:`Span` s; :func:`build_subgoals` turns them into subgoals with
``effect`` (a sentence from the UI-tree diff), ``behaviour`` (the action pattern, e.g.
``scroll x2, tap``) and ``success`` from a success judge (:mod:`guimem.smg.judge`).

- ``rule`` (default): reads only what an agent sees — the UI trees before and after each
  action and the actions themselves. Never the ground-truth labels, the true screen type
  (``Observation.screen``), ``Episode.success`` or the provenance: it works on
  :func:`~guimem.smg.screens.blind` copies.
- ``ground_truth``: the world's :class:`~guimem.core.data.SubgoalLabel` runs (analysis, upper bound).

The language-model segmenter is in :mod:`guimem.smg.llm_segmenter`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Protocol, Sequence

from guimem.core.data import DataError, Episode, Subgoal
from guimem.core.describe import (
    FIELD_ROLES,
)
from guimem.smg.annotate import behaviour_of, span_effect, span_intent
from guimem.smg.judge import Judge, RuleJudge
from guimem.smg.screens import Reading, blind, read_episode, screen_contexts


@dataclass(frozen=True)
class Span:
    """A proposed subgoal: steps ``first..last`` (inclusive, 0-based) and its intent text."""

    first: int
    last: int
    text: str


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
            effect=span_effect(episode, a, span.last, contexts), behaviour=behaviour_of(actions),
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


class SegmenterBase:
    """Shared :meth:`segment`: spans from the subclass, verdicts from the judge."""

    name = ""

    def __init__(self, judge: Judge | None = None):
        self.judge = judge if judge is not None else RuleJudge()

    def spans(self, episode: Episode) -> list[Span]:  # pragma: no cover - abstract
        raise NotImplementedError

    def segment(self, episode: Episode) -> list[Subgoal]:
        """The episode's subgoals, annotated, with the judge's per-subgoal verdicts."""
        spans = self.spans(episode)
        verdicts = self.judge.judge(blind(episode), [(s.first, s.last) for s in spans])
        return build_subgoals(episode, spans, verdicts.subgoals)


class GroundTruthSegmenter(SegmenterBase):
    """Spans from the world's :class:`~guimem.core.data.SubgoalLabel` runs (analysis only)."""

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


OPENERS = frozenset({"icon", "list_item", "menu_item", "button"})  # roles of controls that open menus, windows, pages
VALUE_SETTERS = frozenset({"icon", "radio"})  # roles of controls that set a value in place (a quantity, a choice)


def _navigates(ep: Episode, r: Reading, k: int) -> bool:
    """Whether touch ``k`` moved to another page: a tap on a row, menu entry, icon, tab or button
    after which the screen has another title and no window over it."""
    target, before, after = r.targets[k], r.contexts[k], r.contexts[k + 1]
    return (ep.steps[k].action.type == "tap" and target is not None and target.role in OPENERS | {"tab"}
            and after.overlay is None and after.name != before.name)


def _opened_window(ep: Episode, r: Reading, k: int) -> bool:
    """Whether touch ``k`` opened a menu or window: a long press, or a tap on a control that opens things."""
    target, before, after = r.targets[k], r.contexts[k], r.contexts[k + 1]
    action = ep.steps[k].action.type
    return (after.overlay is not None and after.overlay != before.overlay and target is not None
            and (action == "long_press" or (action == "tap" and target.role in OPENERS)))


def _interruption(ep: Episode, r: Reading, k: int) -> bool:
    """Whether step ``k`` closed a window the agent did not open (a popup that came by itself)."""
    before, after = r.contexts[k], r.contexts[k + 1]
    if before.overlay is None or after.overlay is not None:
        return False
    return k == 0 or not (_opened_window(ep, r, k - 1) or r.contexts[k - 1].overlay == before.overlay)


def _continues(ep: Episode, r: Reading, i: int, j: int) -> bool:
    """Whether effective step ``i`` continues the subgoal of the effective step ``j`` before it
    (only noise between them), one sub-intent over several actions:

    * typing after its field tap, ``enter`` after typing, and the tap on the control beside the
      field that submits what was typed (save, send, start);
    * a choice in the menu or window the previous touch opened (a menu entry, a dialog's button);
    * a run of touches that each lead to another page (navigation through menus, tabs and rows);
    * the same control pressed again, and a labelled button after a value set in place on the
      same page (a quantity, then "Add to cart").
    """
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
    if a.type not in ("tap", "long_press"):
        return False
    target, prev_target = r.targets[i], r.targets[j]
    if prev.type == "type":
        return a.type == "tap" and target is not None and target.role in ("icon", "button")
    if _opened_window(ep, r, j) and r.contexts[i].overlay is not None and r.contexts[i] == r.contexts[j + 1]:
        return True
    if _navigates(ep, r, j) and _navigates(ep, r, i):
        return True
    same_page = r.contexts[j] == r.contexts[j + 1] == r.contexts[i]
    if prev.type == a.type and target is not None and target == prev_target:  # pressing the same control again
        return same_page and r.contexts[i] == r.contexts[i + 1]
    return (a.type == prev.type == "tap" and same_page and target is not None and target.role == "button"
            and prev_target is not None and prev_target.role in VALUE_SETTERS)


def rule_spans(episode: Episode) -> list[Span]:
    """Cut an episode by what its steps did to the screen (see :class:`RuleSegmenter`)."""
    ep = blind(episode)
    r = read_episode(ep)
    groups: list[list[int]] = []
    pending: list[int] = []  # noise, scrolls and detours waiting for the step they led to
    only_noise = True  # every pending step is noise (kept as the steps arrive: a long wait costs no rescans)
    interrupted = False  # the last group dismissed an interruption: the next step starts anew
    for i, kind in enumerate(r.kinds):
        if kind in ("noise", "scroll", "detour"):
            pending.append(i)
            only_noise = only_noise and kind == "noise"
            continue
        if kind == "effective" and _interruption(ep, r, i):
            groups.append(pending + [i])
            interrupted = True
        elif kind == "end" and ep.steps[i].action.type == "done" and groups and not interrupted:
            groups[-1].extend(pending + [i])
        elif kind == "effective" and groups and only_noise and not interrupted and _continues(ep, r, i, groups[-1][-1]):
            groups[-1].extend(pending + [i])
        else:
            groups.append(pending + [i])
            interrupted = False
        pending, only_noise = [], True
    if pending:
        groups.append(pending)
    return [Span(g[0], g[-1], span_intent(ep, g[0], g[-1], r)) for g in groups]


class RuleSegmenter(SegmenterBase):
    """Boundaries from the screens and the actions only (never the labels or the true screen types).

    Each step is read as *effective* (the screen changed), *noise* (nothing visible
    changed), a *scroll*, part of a *detour* (it entered a screen or menu and a ``back``
    left the screen exactly as before) or the *end* (``done``/``impossible``). Noise, scrolls
    and detours join the effective step that follows them. An effective step continues the
    subgoal before it when it carries on the same sub-intent (:func:`_continues`): typing and
    submitting what was typed, a choice in the menu or window just opened, a run of touches
    from page to page, pressing a control again. ``done`` joins the last subgoal, while
    ``impossible`` gives up on a new one. A scroll after which a window appears counts as
    effective. A step that closes a window the agent did not open (an interrupting popup) is a
    subgoal of its own, and the step after it starts a new one. Leftover noise at the end of an
    episode (wandering) forms its own subgoal.
    """

    name = "rule"

    def spans(self, episode: Episode) -> list[Span]:
        """The episode's rule spans with their intents."""
        return rule_spans(episode)

"""Annotating a subgoal: its behaviour (action pattern), effect (UI-tree diff) and intent, in words.
"""

from __future__ import annotations

from typing import Sequence

from guimem.core.data import Action, Episode, Observation, Step, UIElement
from guimem.core.describe import (
    FIELD_ROLES,
    is_labeled,
    region_words,
    swipe_direction,
)
from guimem.smg.screens import (
    CHOICE_ROLES,
    HOME,
    UNTITLED,
    Context,
    Reading,
    blind,
    choice_states,
    element_name,
    field_contents,
    field_name,
    looks_same,
    read_episode,
    screen_in_prose,
    visible_label,
)

_VERBS = {"tap": "tap", "long_press": "long press", "swipe": "scroll", "type": "type", "back": "back",
          "home": "home", "enter": "enter", "open_app": "open app", "done": "done", "impossible": "impossible",
          "answer": "answer", "wait": "wait"}


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
        clauses.append(f"the screen changed from {screen_in_prose(ctx0.name)} to {screen_in_prose(ctx1.name)}")
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
            labels0 = {visible_label(e) for e in before.elements if visible_label(e)}
            labels1 = {visible_label(e) for e in after.elements if visible_label(e)}
            new, gone = len(labels1 - labels0), len(labels0 - labels1)
            if new or gone:
                clauses.append(f"the content of {screen_in_prose(ctx1.name)} changed ({new} new, {gone} gone)")
            elif not looks_same(before, after):
                clauses.append(f"{screen_in_prose(ctx1.name)} looks different (same UI tree)")
    if not clauses:
        return NO_CHANGE
    sentence = "; ".join(clauses[:3])
    return sentence[0].upper() + sentence[1:] + "."


NO_CHANGE = "Nothing visible changed."
NOT_RECORDED = "What the last action did was not recorded."


def screen_at(episode: Episode, k: int) -> Observation:
    """``episode.observations[k]`` without building the tuple: screen ``k`` of the episode (step
    ``k``'s, or after the last step the final one, else the last step's). Functions called once per
    span read screens through it, so that annotating every span of an episode stays linear in its
    length."""
    steps = episode.steps
    if k < len(steps):
        return steps[k].observation
    return episode.final if episode.final is not None else steps[-1].observation


def span_effect(episode: Episode, first: int, last: int, contexts: Sequence[Context]) -> str:
    """The effect of steps ``first..last`` of ``episode`` (``contexts``: its screens' contexts):
    :func:`effect_of` their first screen and the one they led to. When that is the end of a
    recording without a final screen, the change up to the last action's screen, then
    :data:`NOT_RECORDED`."""
    if last + 1 < len(episode.steps) or episode.final_recorded:
        return effect_of(screen_at(episode, first), screen_at(episode, last + 1), contexts[first], contexts[last + 1])
    if first == last:
        return NOT_RECORDED
    before, after = screen_at(episode, first), screen_at(episode, last)
    return f"{effect_of(before, after, contexts[first], contexts[last])} {NOT_RECORDED}"


def _touch_name(target: UIElement | None, step: Step) -> str:
    """``'Delete'``, ``the unlabeled icon at top right`` or ``the screen at center``."""
    if target is None:
        return f"the screen at {region_words(step.action.point)}"
    if is_labeled(target):
        return f"'{visible_label(target)}'"
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

    An answer to the user wins (``answer "Call with Marketing"``: what the span found out); then
    typing (``type 'milk' into "Search" and submit``); else the last effective step (what it
    opened, switched or chose); else the last step of any kind.

    It reads the span's actions and UI trees, which a :func:`blind` copy keeps, and ``reading``
    (:func:`read_episode` of the episode, made here when not given): no label, true screen type,
    success or provenance. With ``reading`` given its cost is that of the span, not of the episode,
    so that naming every span of an episode stays linear in its length.
    """
    ep = blind(episode) if reading is None else episode
    r = reading or read_episode(ep)
    idx = range(first, last + 1)
    answers = [i for i in idx if ep.steps[i].action.type == "answer"]
    if answers:
        return f'answer "{ep.steps[answers[-1]].action.text}"'
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
        text = _tap_intent(step, r.targets[i], ctx0, ctx1, screen_at(ep, i + 1))
        repeats = sum(1 for j in effective if r.targets[j] is not None and r.targets[j] == r.targets[i])
        return f"{text} {repeats} times" if repeats > 1 and text.startswith(("tap", "long press")) else text
    if a.type == "swipe":
        direction = swipe_direction(a)
        verb = f"scroll {direction}" if direction != "none" else "swipe in place"
        return f"{verb} on {screen_in_prose(ctx0.name)}"
    if a.type == "back":
        if ctx0.overlay is not None and ctx1.overlay is None:
            return "close the menu" if ctx0.overlay == "menu" else f"close the '{ctx0.overlay}' window"
        return f"go back to {screen_in_prose(ctx1.name)}"
    if a.type == "enter":
        return "submit the text"
    if a.type == "home":
        return "go to the home screen"
    if a.type == "open_app":
        return f"open the {a.text} app"
    if a.type == "done":
        return "finish the task"
    if a.type == "answer":
        return f'answer "{a.text}"'
    if a.type == "wait":
        return f"wait on {screen_in_prose(ctx0.name)}"
    return "give up on the task"  # impossible

"""Reading screens and episodes as an agent sees them: titles, overlays, fields, choices, contexts.

Everything here reads only what an agent sees — UI trees and actions — never the world's
ground truth: :func:`blind` strips the labels, true screen types, outcome and provenance from
an episode before anything reads it. :func:`read_episode` sorts each step into effective,
noise, scroll, detour or end; :func:`trajectory_text` is the compact trajectory a language
model reads (for segmentation and judging).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from guimem.core.data import ENDING_TYPES, Episode, Observation, Step, UIElement
from guimem.core.describe import (
    FIELD_ROLES,
    describe_actions,
    target_element,
)

TITLE_BAND = (0.02, 0.15)  # a top-bar title lies inside this vertical band (normalized y)
OVERLAY_ROLES = frozenset({"dialog", "menu", "sheet", "popup", "alert"})  # roles of a window drawn over the screen
CHOICE_ROLES = frozenset({"toggle", "radio", "checkbox", "switch"})  # controls whose state is a setting


# ============================================================================= blind views
def blind(episode: Episode) -> Episode:
    """A copy holding only what an agent sees: no labels, true screen types, success or provenance."""

    def see(obs: Observation) -> Observation:
        return Observation(screenshot=obs.screenshot, elements=obs.elements)

    steps = tuple(Step(observation=see(s.observation), action=s.action) for s in episode.steps)
    final = see(episode.final) if episode.final is not None else None
    return Episode(id=episode.id, app=episode.app, goal=episode.goal, steps=steps, final=final)


# ============================================================================= reading a screen
def visible_label(element: UIElement) -> str:
    """An element's visible text, else its description, else ''."""
    return element.text.strip() or element.description.strip()


def screen_title(elements: Sequence[UIElement]) -> str:
    """The title in the top bar: the element with id ``title``, else the first non-clickable
    text lying inside :data:`TITLE_BAND`; '' when there is none."""
    for e in elements:
        if e.id == "title" and visible_label(e):
            return visible_label(e)
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


def screen_in_prose(name: str) -> str:
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
        if step.action.type in ENDING_TYPES:
            kinds.append("end")
        elif i == n - 1 and not ep.final_recorded:
            kinds.append("effective")  # its outcome was not recorded: not taken for "nothing happened"
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


def trajectory_text(episode: Episode) -> str:
    """The compact trajectory the LLM reads: goal, one line per step (``[screen] action``), end screen."""
    ep = blind(episode)
    phrases = describe_actions([s.action for s in ep.steps], [s.elements for s in ep.steps])
    contexts = screen_contexts(ep.observations)
    lines = [f"Goal: {ep.goal}", "Steps:"]
    for k, (ctx, phrase) in enumerate(zip(contexts, phrases), start=1):
        lines.append(f"{k}. [{ctx.words()}] {phrase}")
    lines.append(f"End: [{contexts[-1].words()}]" if ep.final_recorded
                 else f"End: not recorded (the last screen seen: [{contexts[-1].words()}])")
    return "\n".join(lines)

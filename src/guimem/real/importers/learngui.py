"""LearnGUI-Offline trajectories (LearnAct's ``low_level_instructions.json``) into an episode store.

The file maps each episode id to ``{"instruction": ..., "steps": [...]}``; a step is::

    {"step_id": 1, "image_path": "<file under the screenshot folder>", "action": "CLICK[156,2067]",
     "action_description": "Click on the search bar"}

Actions are LearnGUI's strings, coordinates in pixels of the step's screenshot (x from the left,
y from the top; divided here by the screenshot's size, read from its header):

=========================  ==========================================================
``CLICK[x,y]``             ``tap``
``LONG_PRESS[x,y]``        ``long_press``
``SWIPE[UP]`` ... ``[RIGHT]``  ``swipe`` by that direction (the finger's motion, "swipe the
                           screen up"), from the screen's centre (LearnGUI records no start)
``TYPE[text]``             ``type``
``PRESS_BACK`` / ``_HOME`` / ``_ENTER``  ``back`` / ``home`` / ``enter``
``TASK_COMPLETE[]``        ``done``
``TASK_COMPLETE[answer]``  ``answer`` with that text (LearnGUI's own scorer counts any
                           TASK_COMPLETE right; here the answer is kept and scored by its text)
``TASK_IMPOSSIBLE``        ``impossible``
=========================  ==========================================================

Each step's ``action_description`` (LearnGUI's low-level instruction) is kept in the episode's
provenance (``action_descriptions``, one per step). The app is the episode's ``app`` (or
``detected_app``) when it has one, else ``app``, else ``unknown``; success is unknown. No screen is
recorded after the last action: after TASK_COMPLETE or TASK_IMPOSSIBLE the last step's screen is
the final one, after another action there is none (``provenance["final_screen"]``, see
:func:`~.common.final_screen`).

**Checked.** A step's ``step_id``, where given, counts up by one in the order of the steps (from 1,
or 0): a duplicate, a gap or a swap means the list is not in the episode's order. Screenshots stay
inside the screenshot folder once symbolic links are followed, and the store may neither lie in
that folder nor hold it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping

from guimem.core.data import Action, DataError, Episode, Observation, Step, as_object, get_field
from guimem.core.executor import Executor
from guimem.core.io import check_number, read_json
from guimem.core.store import load_episodes
from guimem.real.importers.common import (
    ScreenshotFiles, check_image_file, check_images_folder, check_max_side, check_step_numbers, final_screen,
    safe_id, write_import,
)

FORMAT = "learngui"
STEP_STARTS = (1, 0)  # LearnGUI numbers its steps from 1; a release counting from 0 is read the same
_POINT = re.compile(r"^(CLICK|LONG_PRESS)\[\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\]$", re.IGNORECASE)
_SWIPE = re.compile(r"^SWIPE\[\s*(\w+)\s*\]$", re.IGNORECASE)
_TEXT = re.compile(r"^(TYPE|TASK_COMPLETE)\[(.*)\]$", re.IGNORECASE | re.DOTALL)
_SIMPLE = {"PRESS_BACK": "back", "PRESS_HOME": "home", "PRESS_ENTER": "enter", "TASK_COMPLETE": "done",
           "TASK_IMPOSSIBLE": "impossible"}


def parse_action(text: str, size: tuple[int, int]) -> Action:
    """A LearnGUI action string as an :class:`Action` on a screenshot of ``size`` (width, height) pixels."""
    s = text.strip()
    if m := _POINT.match(s):
        x, y = float(m.group(2)), float(m.group(3))
        if not (0 <= x <= size[0] and 0 <= y <= size[1]):
            raise DataError("action", f"{s!r:.60}: the point lies outside the {size[0]}x{size[1]} screenshot")
        point = (min(x / size[0], 1.0), min(y / size[1], 1.0))
        return Action("tap" if m.group(1).upper() == "CLICK" else "long_press", point=point)
    if m := _SWIPE.match(s):
        direction = m.group(1).lower()
        try:
            return Action("swipe", point=(0.5, 0.5), direction=direction)
        except DataError:
            raise DataError("action", f"{s!r:.60}: expected SWIPE[UP], [DOWN], [LEFT] or [RIGHT]") from None
    if m := _TEXT.match(s):
        kind, body = m.group(1).upper(), m.group(2)
        if kind == "TYPE":
            return Action("type", text=body)
        return Action("answer", text=body.strip()) if body.strip() else Action("done")
    if s.upper() in _SIMPLE:
        return Action(_SIMPLE[s.upper()])
    raise DataError("action", f"unknown action {s!r:.60}; expected CLICK[x,y], LONG_PRESS[x,y], SWIPE[dir], "
                              "TYPE[text], PRESS_BACK, PRESS_HOME, PRESS_ENTER, TASK_COMPLETE[...] or TASK_IMPOSSIBLE")


def read_episode(name: str, raw: Any, screenshots: Path, episode_id: str,
                 app: str | None) -> tuple[Episode, dict[str, Path]]:
    """One episode's entry as an :class:`Episode`, screenshot keys being file paths."""
    entry = as_object(raw, "")
    goal = get_field(entry, "instruction", str)
    raw_steps = get_field(entry, "steps", list)
    if not raw_steps:
        raise DataError("steps", "no steps")
    numbers, fields = [], []
    for i, raw_step in enumerate(raw_steps):
        given = raw_step.get("step_id") if isinstance(raw_step, dict) else None
        numbers.append(None if given is None else check_number(given, f"steps[{i}].step_id", 0, integer=True))
        fields.append(f"steps[{i}].step_id")
    check_step_numbers(numbers, fields, STEP_STARTS)
    steps, files, descriptions = [], {}, []
    for i, raw_step in enumerate(raw_steps):
        try:
            step = as_object(raw_step, "")
            path, size = check_image_file(screenshots, get_field(step, "image_path", str), "image_path")
            action = parse_action(get_field(step, "action", str), size)
            descriptions.append(get_field(step, "action_description", str, optional=True) or "")
        except DataError as err:
            raise err.at(None, f"steps[{i}]") from None
        files[str(path)] = path
        steps.append(Step(Observation(screenshot=str(path)), action))
    own_app = get_field(entry, "app", str, optional=True) or get_field(entry, "detected_app", str, optional=True)
    final, final_how = final_screen(steps, None)
    provenance = {"source": FORMAT, "source_name": name, "final_screen": final_how,
                  "action_descriptions": descriptions}
    return Episode(id=episode_id, app=own_app or app or "unknown", goal=goal, steps=tuple(steps),
                   final=final, success=None, provenance=provenance), files


def import_learngui(src: str | os.PathLike, store: str | os.PathLike, images: str | os.PathLike | None = None,
                    app: str | None = None, max_side: int | None = None, ocr: bool = False,
                    labels: Mapping[str, Any] | None = None,
                    subgoal_labels: Mapping[str, Any] | None = None,
                    executor: Executor | None = None) -> list[Episode]:
    """Import LearnGUI's episode file ``src`` (screenshots under ``images``, by default the
    ``screenshot`` folder beside it) into the episode store ``store``; ``app`` names the app of
    episodes that do not name their own, ``max_side`` downscales screenshots; with ``ocr``, screens
    recorded without a UI tree get the text elements OCR reads on them (:mod:`guimem.real.ocr`);
    ``labels`` maps an episode's source name to its screens' types
    (:func:`~guimem.real.importers.common.with_labels`); ``subgoal_labels`` maps it to its
    subgoals (:func:`~guimem.real.importers.common.with_subgoal_labels`); ``executor`` runs the
    OCR (:func:`~guimem.real.importers.common.with_ocr`). Everything is parsed
    and checked before anything is written. Returns the episodes as stored."""
    path = Path(src)
    if not path.is_file():
        raise DataError("src", "not a file (LearnGUI's low_level_instructions.json)", str(path))
    screenshots = Path(images) if images is not None else path.parent / "screenshot"
    if not screenshots.is_dir():
        raise DataError("images", "not a folder (the screenshots; --images names it)", str(screenshots))
    check_max_side(max_side)
    check_images_folder(screenshots, store)
    doc = read_json(path)
    if not isinstance(doc, dict) or not doc:
        raise DataError("", "expected an object mapping episode ids to episodes", str(path))
    taken: set[str] = set()
    episodes, files = [], {}
    for name in sorted(doc):
        try:
            episode, shots = read_episode(name, doc[name], screenshots, safe_id(name, taken), app)
        except DataError as err:
            raise err.at(str(path), name) from None
        episodes.append(episode)
        files.update(shots)
    write_import(episodes, ScreenshotFiles(files, max_side), store,
                 {"format": FORMAT, "path": str(path), "images": str(screenshots), "app": app}, ocr=ocr, labels=labels,
                 subgoal_labels=subgoal_labels, executor=executor)
    return load_episodes(store, verify_images=False)

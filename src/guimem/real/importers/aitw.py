"""Android in the Wild as commonly released in JSON (SeeClick's ``aitw_data_<split>.json``) into an
episode store.

The file is ``{scenario: [episode, ...]}`` (``general``, ``install``, ``googleapps``, ``single``,
``webshopping``) or a bare list of episodes; an episode is a list of steps in order, each::

    {"ep_id": "...", "goal": "...", "img_filename": "general/1234_0", "action_type_id": 4,
     "action_type_text": "click", "touch": [x, y], "lift": [x, y], "type_text": "",
     "annot_position": [y, x, h, w, y, x, h, w, ...]}

Screenshots are ``<images>/<img_filename>.png`` (or ``<images>/<img_filename>`` when the name
already ends in an image extension).

**Conventions.** ``touch`` and ``lift`` are ``[x, y]`` fractions of the screen in this release
(the original TFRecords' ``results_touch_yx`` reversed; its evaluation code turns them back into
``(y, x)``); the boxes of ``annot_position`` are AITW's own ``(y, x, height, width)`` fractions.
Action types are AITW's ``ActionType`` ids:

====  =====================  ====================================================
 id   AITW                   here
====  =====================  ====================================================
 3    TYPE                   ``type`` of ``type_text``
 4    DUAL_POINT             ``tap`` at ``touch`` when the finger lifts within AITW's 0.04 of
                             where it touched (its tap rule), else ``swipe`` from ``touch`` to
                             ``lift`` (the finger's recorded motion; ``action_type_text``'s
                             "scroll down" and the like are not reinterpreted)
 5    PRESS_BACK             ``back``
 6    PRESS_HOME             ``home``
 7    PRESS_ENTER            ``enter``
 10   STATUS_TASK_COMPLETE   ``done``
 11   STATUS_TASK_IMPOSSIBLE ``impossible``
====  =====================  ====================================================

(ids 0-2, 8 and 9 are unused in the released data and refused.) Every annotated box becomes a
label-free element (role ``view``): what AITW's tap matching reads (the release carries no box
text). AITW records no screen after an episode's last action; that action is
usually its closing status, which leaves the screen as it is, so the last step's screen is the
final one (``provenance["final_screen"]``: ``repeated``; ``not recorded`` after any other action,
see :func:`~.common.final_screen`). Success is unknown
(AITW's demonstrations are not judged); the scenario and AITW's episode id stay in provenance.

**Checked.** Every step of an episode has its ``ep_id`` and ``goal``; a ``step_id``, where given,
counts up by one in the order of the steps (a duplicate, gap or swap is refused); a box that starts
off the screen is refused; screenshots stay inside ``images`` once symbolic links are followed,
and the store may neither lie in that folder nor hold it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from guimem.core.data import Action, DataError, Episode, Observation, Step, UIElement, as_object, get_field
from guimem.core.executor import Executor
from guimem.core.io import check_number, read_json
from guimem.core.store import load_episodes
from guimem.real.importers.common import (
    ScreenshotFiles, check_image_file, check_images_folder, check_max_side, check_step_numbers, final_screen,
    safe_id, write_import,
)

FORMAT = "aitw"
TAP_LIFT = 0.04
"""AITW's tap rule: a dual-point gesture whose lift is within this (normalized) of its touch is a tap."""
_SIMPLE = {5: "back", 6: "home", 7: "enter", 10: "done", 11: "impossible"}
_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp")
STEP_STARTS = (0, 1)  # AITW's step_id counts from 0; a release counting from 1 is read the same


def _unit_pair(value: Any, field: str) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise DataError(field, f"expected [x, y] fractions of the screen, got {value!r:.60}")
    return tuple(float(check_number(v, f"{field}[{i}]", 0.0, 1.0)) for i, v in enumerate(value))


def parse_step_action(step: Mapping[str, Any]) -> Action:
    """A step's action from its ``action_type_id`` and the fields that type reads."""
    kind = check_number(get_field(step, "action_type_id", int), "action_type_id", integer=True)
    if kind == 4:
        touch = _unit_pair(get_field(step, "touch", list), "touch")
        lift = _unit_pair(get_field(step, "lift", list), "lift")
        if math.dist(touch, lift) <= TAP_LIFT:
            return Action("tap", point=touch)
        return Action("swipe", point=touch, end=lift)
    if kind == 3:
        return Action("type", text=get_field(step, "type_text", str))
    if kind in _SIMPLE:
        return Action(_SIMPLE[kind])
    raise DataError("action_type_id", f"{kind} is not an action of the released data (3-7, 10, 11)")


def parse_boxes(value: Any) -> tuple[UIElement, ...]:
    """``annot_position``'s flat ``(y, x, h, w)`` boxes as label-free elements (clipped to the screen)."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) % 4:
        raise DataError("annot_position", f"expected a flat list of (y, x, h, w) boxes, got {value!r:.60}")
    out = []
    for i in range(0, len(value), 4):
        y, x, h, w = (float(check_number(v, f"annot_position[{i + j}]", 0.0)) for j, v in enumerate(value[i:i + 4]))
        if x >= 1.0 or y >= 1.0:  # clipped, it would be an element of no width at the screen's edge
            raise DataError(f"annot_position[{i}:{i + 4}]", f"box (y={y:.4g}, x={x:.4g}) starts off the screen "
                                                            "(fractions of it are below 1)")
        bounds = (min(x, 1.0), min(y, 1.0), min(x + w, 1.0), min(y + h, 1.0))
        out.append(UIElement(id=f"box{i // 4}", role="view", bounds=bounds))
    return tuple(out)


def _image(images: Path, name: str, field: str) -> Path:
    path, _ = check_image_file(images, name if name.lower().endswith(_IMAGE_EXTENSIONS) else f"{name}.png", field)
    return path


def read_episode(steps: Sequence[Any], images: Path, episode_id: str, scenario: str | None,
                 app: str | None) -> tuple[Episode, dict[str, Path]]:
    """One episode's steps (dicts) as an :class:`Episode`, screenshot keys being file paths."""
    if not isinstance(steps, list) or not steps:
        raise DataError("", f"an episode is a non-empty list of steps, got {steps!r:.60}")
    numbers = [s.get("step_id") if isinstance(s, dict) else None for s in steps]
    fields = [f"steps[{i}].step_id" for i in range(len(steps))]
    check_step_numbers([None if n is None else check_number(n, f, 0, integer=True) for n, f in zip(numbers, fields)],
                       fields, STEP_STARTS)
    out, files, goal, ep_id = [], {}, None, None
    for i, raw in enumerate(steps):
        try:
            step = as_object(raw)
            this_goal, this_id = get_field(step, "goal", str), str(get_field(step, "ep_id", (str, int)))
            if goal is not None and (this_goal != goal or this_id != ep_id):
                raise DataError("ep_id", f"step {i} belongs to episode {this_id!r} ({this_goal!r:.40}), "
                                         f"not {ep_id!r} ({goal!r:.40})")
            goal, ep_id = this_goal, this_id
            action = parse_step_action(step)
            path = _image(images, get_field(step, "img_filename", str), "img_filename")
            elements = parse_boxes(step.get("annot_position"))
        except DataError as err:
            raise err.at(None, f"steps[{i}]") from None
        files[str(path)] = path
        out.append(Step(Observation(screenshot=str(path), elements=elements), action))
    final, final_how = final_screen(out, None)
    provenance = {"source": FORMAT, "source_name": ep_id, "final_screen": final_how,
                  **({"scenario": scenario} if scenario is not None else {})}
    return Episode(id=episode_id, app=app or "unknown", goal=goal, steps=tuple(out), final=final,
                   success=None, provenance=provenance), files


def import_aitw(src: str | os.PathLike, store: str | os.PathLike, images: str | os.PathLike | None = None,
                app: str | None = None, max_side: int | None = None, ocr: bool = False,
                labels: Mapping[str, Any] | None = None,
                subgoal_labels: Mapping[str, Any] | None = None,
                executor: Executor | None = None) -> list[Episode]:
    """Import the AITW JSON file ``src`` (screenshots under ``images``, by default the file's folder)
    into the episode store ``store``; ``app`` names every episode's app (AITW's scenarios span
    many), ``max_side`` downscales screenshots; with ``ocr``, screens recorded without a UI tree get
    the text elements OCR reads on them (:mod:`guimem.real.ocr`); ``labels`` maps an episode's
    source name to its screens' types (:func:`~guimem.real.importers.common.with_labels`);
    ``subgoal_labels`` maps it to its subgoals
    (:func:`~guimem.real.importers.common.with_subgoal_labels`); ``executor`` runs the OCR
    (:func:`~guimem.real.importers.common.with_ocr`).
    Everything is parsed and checked before anything is written. Returns the episodes as stored."""
    path = Path(src)
    if not path.is_file():
        raise DataError("src", "not a file (the AITW JSON release)", str(path))
    images = Path(images) if images is not None else path.parent
    if not images.is_dir():
        raise DataError("images", "not a folder", str(images))
    check_max_side(max_side)
    check_images_folder(images, store)
    doc = read_json(path)
    groups = ([(None, doc)] if isinstance(doc, list) else
              sorted(as_object(doc, "").items()) if isinstance(doc, dict) else None)
    if groups is None:
        raise DataError("", f"expected {{scenario: [episodes]}} or [episodes], got {type(doc).__name__}", str(path))
    taken: set[str] = set()
    episodes, files = [], {}
    for scenario, eps in groups:
        where = f"{scenario}" if scenario is not None else ""
        if not isinstance(eps, list):
            raise DataError(where, f"expected a list of episodes, got {type(eps).__name__}", str(path))
        for j, steps in enumerate(eps):
            try:
                first = as_object(steps[0] if isinstance(steps, list) and steps else None, "")
                name = str(get_field(first, "ep_id", (str, int)))
                episode, shots = read_episode(steps, images, safe_id(name, taken), scenario, app)
            except DataError as err:
                raise err.at(str(path), f"{where}[{j}]" if where else f"[{j}]") from None
            episodes.append(episode)
            files.update(shots)
    write_import(episodes, ScreenshotFiles(files, max_side), store,
                 {"format": FORMAT, "path": str(path), "images": str(images), "app": app}, ocr=ocr, labels=labels,
                 subgoal_labels=subgoal_labels, executor=executor)
    return load_episodes(store, verify_images=False)

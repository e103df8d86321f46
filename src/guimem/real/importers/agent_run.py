"""Agent run folders (AndroidWorld-style ``mobile_use`` recordings) into an episode store.

One run is one folder::

    <run>/action.jsonl        one line per step: {"name": "mobile_use", "arguments": {"action": ..., ...}}
    <run>/screenshot_<i>.png  the screen before step i (i = 0 .. steps - 1); screenshot_<steps>.png,
                              when present, is the screen after the last step

(``screenshot_resized_<i>.png`` and any other file are ignored.) ``src`` is one run folder or a
folder of them, imported in name order.

**Checked.** The screenshots must be numbered 0 .. steps (the last optional) with no gap, no
number twice (``screenshot_1.png`` and ``screenshot_01.png`` are both step 1) and none past the
after-screen (a ``screenshot_9.png`` beside 3 action lines means lines or screens are missing).
Every file read — ``action.jsonl``, each screenshot, each run folder of ``src`` — must stay inside
its folder once symbolic links are followed (:func:`~guimem.core.io.file_inside`).

**Actions** (``arguments.action``), coordinates integers on a 0..999 grid of the screen
(:data:`GRID`: 999 is the right or bottom edge):

============================  =====================================================
``click`` / ``long_press``    ``tap`` / ``long_press`` at ``coordinate``
``swipe``                     ``swipe`` from ``coordinate`` (the centre if absent) by ``direction``
                              (the finger's motion) or to ``coordinate2``
``type``                      ``type`` of ``text`` (a ``coordinate`` given with it, the field, is
                              kept in the episode's provenance: ``type_points``)
``open``                      ``open_app`` of ``text``
``answer``                    ``answer`` with ``text`` (the reply to the user: kept and described)
``terminate``                 ``done`` (``status`` success) or ``impossible`` (any other status)
``system_button``             ``back`` / ``home`` / ``enter`` (``button``: Back, Home, Enter)
``wait``                      ``wait``
============================  =====================================================

**Episodes.** The id is the folder name made file-safe (:func:`~.common.safe_id`; the name is kept
in ``provenance["source_name"]``). The goal is ``goals[name]`` when a goals mapping is given, else
the folder name with ``_`` read as spaces (such folders are often the goal cut at 50 characters:
``provenance["goal_source"]`` says which). The app is ``app``, else the first ``open``'s app, else
``unknown``. Success: ``terminate`` success is True, another status False; no ``terminate``, unknown.
The screen after the last action is the final one when recorded; else the last step's screen
stands for it when that action leaves the screen as it is (``done``, ``impossible``, ``answer``),
and otherwise there is none (:func:`~.common.final_screen`; ``provenance["final_screen"]`` says
which: ``recorded``, ``repeated`` or ``not recorded``).
Recordings carry no UI tree: every screen's ``elements`` is empty.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping

from guimem.core.data import Action, DataError, Episode, Observation, Step, as_object, get_field
from guimem.core.executor import Executor
from guimem.core.io import check_number, file_inside, read_jsonl
from guimem.core.store import load_episodes
from guimem.real.importers.common import (
    ScreenshotFiles, check_image_file, check_max_side, final_screen, safe_id, write_import,
)

FORMAT = "agent_run"
GRID = 999
"""Coordinates are integers 0..GRID across the screen's width and height."""
ACTIONS_FILE = "action.jsonl"
_SCREENSHOT = re.compile(r"^screenshot_([0-9]+)\.png$")
_BUTTONS = {"back": "back", "home": "home", "enter": "enter"}
KNOWN_ACTIONS = ("click", "long_press", "swipe", "type", "open", "answer", "terminate", "system_button", "wait")


def run_folders(src: str | os.PathLike) -> list[Path]:
    """``src`` itself if it is a run folder (it holds ``action.jsonl``), else its sub-folders that
    are, in name order; none, or one that is a symbolic link leading out of ``src``, is a DataError."""
    root = Path(src)
    if not root.is_dir():
        raise DataError("src", "not a folder", str(root))
    if (root / ACTIONS_FILE).is_file():
        return [root]
    runs = sorted(p for p in root.iterdir() if p.is_dir() and (p / ACTIONS_FILE).is_file())
    for run in runs:  # a run folder that is a link out of src would import files from elsewhere
        file_inside(root, run.name, "src", str(root))
    if not runs:
        raise DataError("src", f"no run folder (one holding {ACTIONS_FILE}) in it", str(root))
    return runs


def _grid_point(value: Any, field: str) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise DataError(field, f"expected [x, y] on the 0..{GRID} grid, got {value!r:.60}")
    return tuple(float(check_number(v, f"{field}[{i}]", 0, GRID)) / GRID for i, v in enumerate(value))


def parse_action(args: Mapping[str, Any]) -> tuple[Action, dict[str, Any]]:
    """One step's ``arguments`` as an :class:`Action`, and what it held that the action does not
    (``{"type_point": [x, y]}`` for a ``type`` given a field's coordinate)."""
    kind = get_field(args, "action", str)
    extra: dict[str, Any] = {}
    if kind in ("click", "long_press"):
        return Action("tap" if kind == "click" else "long_press",
                      point=_grid_point(get_field(args, "coordinate", list), "coordinate")), extra
    if kind == "swipe":
        raw = get_field(args, "coordinate", list, optional=True)
        start = _grid_point(raw, "coordinate") if raw is not None else (0.5, 0.5)
        end = get_field(args, "coordinate2", list, optional=True)
        if end is not None:
            return Action("swipe", point=start, end=_grid_point(end, "coordinate2")), extra
        return Action("swipe", point=start, direction=get_field(args, "direction", str).strip().lower()), extra
    if kind == "type":
        raw = get_field(args, "coordinate", list, optional=True)
        if raw is not None:
            extra["type_point"] = list(_grid_point(raw, "coordinate"))
        return Action("type", text=get_field(args, "text", str)), extra
    if kind == "open":
        return Action("open_app", text=get_field(args, "text", str)), extra
    if kind == "answer":
        return Action("answer", text=get_field(args, "text", str)), extra
    if kind == "terminate":
        status = get_field(args, "status", str)
        return Action("done" if status.strip().lower() == "success" else "impossible"), {"status": status}
    if kind == "system_button":
        button = get_field(args, "button", str)
        if button.strip().lower() not in _BUTTONS:
            raise DataError("button", f"expected one of Back, Home, Enter, got {button!r:.60}")
        return Action(_BUTTONS[button.strip().lower()]), extra
    if kind == "wait":
        return Action("wait"), extra
    raise DataError("action", f"unknown action {kind!r:.60}; expected one of {KNOWN_ACTIONS}")


def read_run(folder: Path, episode_id: str, goal: str | None = None,
             app: str | None = None) -> tuple[Episode, dict[str, Path]]:
    """One run folder as an :class:`Episode` (screenshot keys are the files' paths) and its
    screenshot files by key; every line and screenshot header checked."""
    actions_path = file_inside(folder, ACTIONS_FILE, ACTIONS_FILE, str(folder))  # a link out of the run is refused
    actions, notes = [], {}
    for lineno, doc in read_jsonl(actions_path):
        where = f"line {lineno}"
        try:
            args = as_object(get_field(as_object(doc), "arguments", dict), "arguments")
            action, extra = parse_action(args)
        except DataError as err:
            field = (err.field if err.field.startswith("arguments")
                     else ".".join(p for p in ("arguments", err.field) if p))
            raise DataError(f"{where}: {field}", err.message, str(actions_path)) from None
        if extra:
            notes[len(actions)] = extra
        actions.append(action)
    if not actions:
        raise DataError("steps", "no action lines", str(actions_path))
    names: dict[int, str] = {}
    for p in sorted(folder.iterdir()):
        if (m := _SCREENSHOT.match(p.name)):
            i = int(m.group(1))
            if i in names:  # screenshot_1.png and screenshot_01.png: which one is step 1 is not known
                raise DataError(p.name, f"step {i} has two screenshots ({names[i]!r:.60} too)", str(folder))
            names[i] = p.name
    beyond = sorted(i for i in names if i > len(actions))
    if beyond:  # lines or screens are missing: which screen goes with which action is not known
        raise DataError(names[beyond[0]], f"step {beyond[0]}'s screen, but {ACTIONS_FILE} has {len(actions)} "
                                          f"lines (screens 0..{len(actions)} at most)", str(folder))
    shots: dict[int, Path] = {}
    files: dict[str, Path] = {}
    for i in range(len(actions) + 1):
        if i not in names:
            if i == len(actions):
                break  # no after-screen: final_screen() decides
            raise DataError(f"screenshot_{i}.png", f"missing: step {i} of {len(actions)} has no screen", str(folder))
        shots[i], _ = check_image_file(folder, names[i], names[i], str(folder))  # a link out of the run is refused
        files[str(shots[i])] = shots[i]
    observations = [Observation(screenshot=str(shots[i])) for i in range(len(actions))]
    steps = tuple(Step(o, a) for o, a in zip(observations, actions))
    final, final_how = final_screen(steps, Observation(screenshot=str(shots[len(actions)]))
                                    if len(actions) in shots else None)
    statuses = [n["status"] for _, n in sorted(notes.items()) if "status" in n]
    success = statuses[-1].strip().lower() == "success" if statuses else None
    app_name = app or next((a.text for a in actions if a.type == "open_app"), None) or "unknown"
    provenance = {
        "source": FORMAT, "source_name": folder.name, "goal_source": "goals" if goal is not None else "folder name",
        "final_screen": final_how, "coordinate_grid": GRID,
        **({"type_points": {str(i): n["type_point"] for i, n in notes.items() if "type_point" in n}}
           if any("type_point" in n for n in notes.values()) else {}),
    }
    goal = goal if goal is not None else folder.name.replace("_", " ").strip()
    episode = Episode(id=episode_id, app=app_name, goal=goal,
                      steps=steps, final=final, success=success,
                      provenance=provenance)
    return episode, files


def import_agent_runs(src: str | os.PathLike, store: str | os.PathLike, goals: Mapping[str, str] | None = None,
                      app: str | None = None, max_side: int | None = None, ocr: bool = False,
                      labels: Mapping[str, Any] | None = None,
                      subgoal_labels: Mapping[str, Any] | None = None,
                      executor: Executor | None = None) -> list[Episode]:
    """Import every run folder under ``src`` into the episode store ``store`` (replacing an episode
    store there, never anything else); ``goals`` maps a run folder's name to its goal text, ``app``
    names the app of every run, ``max_side`` downscales screenshots (longer side, in pixels; None
    keeps them); with ``ocr``, screens recorded without a UI tree get the text elements OCR reads on
    them (:mod:`guimem.real.ocr`); ``labels`` maps an episode's source name to its screens' types
    (:func:`~guimem.real.importers.common.with_labels`); ``subgoal_labels`` maps it to its
    subgoals (:func:`~guimem.real.importers.common.with_subgoal_labels`); ``executor`` runs the
    OCR (:func:`~guimem.real.importers.common.with_ocr`). Everything is parsed
    and checked before anything is written. Returns the episodes as stored."""
    goals = dict(goals or {})
    for name, goal in goals.items():
        if not isinstance(name, str) or not isinstance(goal, str) or not goal.strip():
            raise DataError(f"goals[{name!r:.40}]", f"expected a non-empty goal text, got {goal!r:.60}")
    check_max_side(max_side)
    taken: set[str] = set()
    episodes, files = [], {}
    for folder in run_folders(src):
        episode, shots = read_run(folder, safe_id(folder.name, taken), goals.get(folder.name), app)
        episodes.append(episode)
        files.update(shots)
    unknown = sorted(set(goals) - {e.provenance["source_name"] for e in episodes})
    if unknown:
        raise DataError("goals", f"names no run folder under src: {unknown[:3]}", str(src))
    write_import(episodes, ScreenshotFiles(files, max_side), store,
                 {"format": FORMAT, "path": str(src), "app": app, "goals": bool(goals)}, ocr=ocr, labels=labels,
                 subgoal_labels=subgoal_labels, executor=executor)
    return load_episodes(store, verify_images=False)

"""A generic JSON-lines recording (one step per line) into an episode store: the format to write
when a recording fits no other importer.

Each line is one step, in order within its episode::

    {"episode": "run-1", "goal": "Turn on Wi-Fi", "app": "settings",        # goal, app: first step
     "screenshot": "shots/run-1/0.png",                                     # relative to the file
     "action": {"type": "tap", "point": [0.5, 0.2]},                        # the data model's action
     "ui_xml": "dumps/run-1/0.xml"}                                         # optional: uiautomator dump

``action`` is :class:`guimem.core.data.Action`'s JSON (``type`` one of
:data:`~guimem.core.data.STEP_TYPES`; ``point``/``end`` fractions of the screen; a swipe may give
``direction`` instead of ``end``; ``text`` for type, open_app and answer). ``ui_xml`` is an
Android accessibility dump (``uiautomator dump``), turned into elements by the device backend's
parser (:func:`guimem.real.device.parse_hierarchy`), its pixel bounds divided by the screenshot's
size (or ``screen_size`` ``[width, height]`` when the dump was taken at another size); without it
a screen has no elements. A line ``{"episode": "run-1", "final_screenshot": "...", "final_ui_xml":
"..."}`` (no action) gives the screen after the episode's last step; without one, the last step's
screen stands for it when that action leaves the screen as it is, and otherwise there is none
(``provenance["final_screen"]``: ``recorded``, ``repeated`` or ``not recorded``). ``success`` (true, false or null) on
any line of an episode is its outcome; ``provenance`` (an object) on its first line is kept.

**Checked.** A later line of an episode may repeat its ``goal`` and ``app``, never change them;
episode ``1`` and ``"1"`` are refused (one episode or two is not known); every path stays inside
the file's folder once symbolic links are followed (:func:`~guimem.core.io.file_inside`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from guimem.core.data import (
    Action,
    DataError,
    Episode,
    Observation,
    Step,
    as_object,
    check_json,
    get_field,
    nested_field,
)
from guimem.core.executor import Executor
from guimem.core.io import file_inside, read_jsonl, read_text
from guimem.core.store import load_episodes
from guimem.real.device import parse_hierarchy
from guimem.real.importers.common import (
    ScreenshotFiles, check_image_file, check_max_side, final_screen, safe_id, write_import,
)

FORMAT = "jsonl"


def _observation(src: Path, line: Mapping[str, Any], shot_key: str, xml_key: str,
                 files: dict[str, Path]) -> Observation:
    """A line's screen: its screenshot (and dump), paths relative to the folder of ``src``."""
    root = src.parent
    shot, size = check_image_file(root, get_field(line, shot_key, str), shot_key, str(src))
    elements = ()
    if line.get(xml_key) is not None:
        xml_path = file_inside(root, get_field(line, xml_key, str), xml_key, str(src))
        if not xml_path.is_file():
            raise DataError(xml_key, "missing", str(xml_path))
        given = line.get("screen_size")
        if given is not None:
            if not (isinstance(given, list) and len(given) == 2 and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in given)):
                raise DataError("screen_size", f"expected [width, height] in pixels, got {given!r:.60}")
            size = (given[0], given[1])
        try:
            elements = parse_hierarchy(read_text(xml_path), size)
        except DataError as err:
            raise err.at(str(xml_path), xml_key) from None
    files[str(shot)] = shot
    return Observation(screenshot=str(shot), elements=elements)


def import_jsonl(src: str | os.PathLike, store: str | os.PathLike, max_side: int | None = None,
                 ocr: bool = False, labels: Mapping[str, Any] | None = None,
                 subgoal_labels: Mapping[str, Any] | None = None,
                 executor: Executor | None = None) -> list[Episode]:
    """Import the JSON-lines recording ``src`` into the episode store ``store``; ``max_side``
    downscales screenshots; with ``ocr``, screens recorded without a UI tree get the text elements
    OCR reads on them (:mod:`guimem.real.ocr`); ``labels`` maps an episode's source name to its
    screens' types (:func:`~guimem.real.importers.common.with_labels`); ``subgoal_labels`` maps
    it to its subgoals (:func:`~guimem.real.importers.common.with_subgoal_labels`); ``executor``
    runs the OCR (:func:`~guimem.real.importers.common.with_ocr`). Everything
    is parsed and checked before anything is written. Returns the episodes as stored."""
    path = Path(src)
    if not path.is_file():
        raise DataError("src", "not a file (a JSON-lines recording)", str(path))
    check_max_side(max_side)
    order: list[str] = []
    steps: dict[str, list[Step]] = {}
    heads: dict[str, dict[str, Any]] = {}
    finals: dict[str, Observation] = {}
    kinds: dict[str, type] = {}  # each episode name's JSON type (int or str)
    files: dict[str, Path] = {}
    for lineno, doc in read_jsonl(path):
        try:
            line = as_object(doc, "")
            raw_name = get_field(line, "episode", (str, int))
            name = str(raw_name)
            if kinds.setdefault(name, type(raw_name)) is not type(raw_name):  # 1 and "1": one episode or two?
                raise DataError("episode", f"{raw_name!r:.60} is a {type(raw_name).__name__}, but an earlier "
                                           f"line names episode {name!r:.60} as a {kinds[name].__name__}")
            if name in finals:
                raise DataError("episode", f"{name!r:.60} already ended with its final screenshot")
            if "final_screenshot" in line:
                if name not in steps:
                    raise DataError("final_screenshot", f"episode {name!r:.60} has no step before its final screen")
                finals[name] = _observation(path, line, "final_screenshot", "final_ui_xml", files)
                continue
            if name not in steps:
                order.append(name)
                steps[name] = []
                given = dict(get_field(line, "provenance", Mapping, optional=True) or {})
                heads[name] = {"goal": get_field(line, "goal", str), "app": get_field(line, "app", str, optional=True),
                               "provenance": check_json(given, "provenance")}
            else:  # a later line may repeat its episode's goal and app, never change them
                for key in ("goal", "app"):
                    if line.get(key) is not None and line[key] != heads[name][key]:
                        raise DataError(key, f"{line[key]!r:.60}, but the episode's first line gives "
                                             f"{heads[name][key]!r:.60}")
            if "success" in line:
                if line["success"] is not None and not isinstance(line["success"], bool):
                    raise DataError("success", f"expected true, false or null, got {line['success']!r:.60}")
                heads[name]["success"] = line["success"]
            action = nested_field("action", Action.from_dict, get_field(line, "action", Mapping))
            steps[name].append(Step(_observation(path, line, "screenshot", "ui_xml", files), action))
        except DataError as err:
            raise DataError(f"line {lineno}: {err.field}" if err.field else f"line {lineno}", err.message,
                            err.path or str(path)) from None
    if not order:
        raise DataError("steps", "no step lines", str(path))
    taken: set[str] = set()
    episodes = []
    for name in order:
        head = heads[name]
        final, final_how = final_screen(steps[name], finals.get(name))
        provenance = {"source": FORMAT, "source_name": name, **head["provenance"], "final_screen": final_how}
        episodes.append(Episode(id=safe_id(name, taken), app=head["app"] or "unknown", goal=head["goal"],
                                steps=tuple(steps[name]), final=final,
                                success=head.get("success"), provenance=provenance))
    write_import(episodes, ScreenshotFiles(files, max_side), store, {"format": FORMAT, "path": str(path)},
                 ocr=ocr, labels=labels,
                 subgoal_labels=subgoal_labels, executor=executor)
    return load_episodes(store, verify_images=False)

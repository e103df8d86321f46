"""Rebuild the bad-input corpus: a tiny valid episode store, then one corrupted copy per case.

Run from the repository root: ``python tests/data/bad_inputs/make_corpus.py``. Each case
folder holds ``store/`` (the corrupted store) and ``expect.json`` (the file, relative to
the store, and the field an error must name, plus a fragment of its message).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

from PIL import Image

from guimem.core.data import Action, Episode, Observation, Step, SubgoalLabel, UIElement
from guimem.core.store import load_episodes, save_episodes

HERE = Path(__file__).parent
EP1, EP2 = "episodes/ep-0001.json", "episodes/ep-0002.json"


def base_store(root: Path) -> None:
    """Two small episodes (5 and 4 steps), every screen a distinct tiny PNG."""
    images: dict[str, Image.Image] = {}
    elements = (UIElement("title", "text", "Notes", "", (0.0, 0.04, 0.8, 0.12), False),
                UIElement("icon:more", "icon", "", "", (0.85, 0.04, 1.0, 0.12), True))
    actions = [Action("open_app", text="Notes"), Action("tap", point=(0.9, 0.08)), Action("tap", point=(0.5, 0.2)),
               Action("swipe", point=(0.5, 0.8), end=(0.5, 0.3)), Action("done")]

    def obs(key: str, colour: tuple[int, int, int]) -> Observation:
        images[key] = Image.new("RGB", (18, 36), colour)
        return Observation(key, elements, "notes/list")

    eps = []
    for e, n in ((1, 5), (2, 4)):
        steps = tuple(Step(obs(f"e{e}s{i}", (40 * i, 60 * e, 200 - 30 * i)), actions[i] if i < n - 1 else Action("done"),
                           SubgoalLabel(min(i, 2), "open_app" if i == 0 else "open_section", f"subgoal {min(i, 2)}"))
                      for i in range(n))
        eps.append(Episode(f"ep-000{e}", "Notes", "Turn on dark mode in Notes", steps, obs(f"e{e}final", (250, 250, 10 * e)),
                           success=e == 1, provenance={"seed": e, "task": {"template": "notes.display", "params": {}}}))
    save_episodes(eps, images, root, {"purpose": "bad-input corpus"})


def edit_json(rel: str, change: Callable[[dict], Any]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        d = json.loads((root / rel).read_text())
        change(d)
        (root / rel).write_text(json.dumps(d, indent=1))  # allow_nan: NaN is written as the bare token
    return apply


def shot(root: Path, step: int | None, rel: str = EP1) -> Path:
    d = json.loads((root / rel).read_text())
    return root / (d["final"] if step is None else d["steps"][step])["screenshot"]


def _set(path: list, value: Any) -> Callable[[dict], None]:
    def change(d: dict) -> None:
        for key in path[:-1]:
            d = d[key]
        d[path[-1]] = value
    return change


def _delete(path: list) -> Callable[[dict], None]:
    def change(d: dict) -> None:
        for key in path[:-1]:
            d = d[key]
        del d[path[-1]]
    return change


CASES: dict[str, tuple[Callable[[Path], None], str, str, str]] = {
    # name: (corruption, file, field, message fragment)
    "malformed_json": (lambda r: (r / EP1).write_text((r / EP1).read_text()[:-40]), EP1, "json", "malformed JSON"),
    "missing_screenshot": (lambda r: shot(r, 2).unlink(), EP1, "steps[2].screenshot", "does not exist"),
    "truncated_screenshot": (lambda r: shot(r, 3).write_bytes(shot(r, 3).read_bytes()[:60]), EP1, "steps[3].screenshot",
                             "does not decode"),
    "not_an_image": (lambda r: shot(r, None).write_text("hello"), EP1, "final.screenshot", "does not decode"),
    "screenshot_outside_store": (edit_json(EP1, _set(["steps", 0, "screenshot"], "../outside.png")), EP1,
                                 "steps[0].screenshot", "inside the store"),
    "unknown_action_type": (edit_json(EP1, _set(["steps", 1, "action", "type"], "fly")), EP1, "steps[1].action.type",
                            "unknown action type"),
    "point_out_of_range": (edit_json(EP1, _set(["steps", 1, "action", "point"], [1.5, 0.2])), EP1,
                           "steps[1].action.point[0]", "[0, 1]"),
    "point_nan": (edit_json(EP1, _set(["steps", 2, "action", "point"], [0.5, float("nan")])), EP1,
                  "steps[2].action.point[1]", "finite"),
    "bounds_out_of_range": (edit_json(EP1, _set(["steps", 1, "elements", 0, "bounds"], [0.1, 0.2, -0.3, 0.4])), EP1,
                            "steps[1].elements[0].bounds[2]", "[0, 1]"),
    "swipe_without_end": (edit_json(EP1, _delete(["steps", 3, "action", "end"])), EP1, "steps[3].action.end", "end point"),
    "missing_action": (edit_json(EP1, _delete(["steps", 4, "action"])), EP1, "steps[4].action", "missing"),
    "empty_episode": (edit_json(EP2, _set(["steps"], [])), EP2, "steps", "no steps"),
    "duplicate_ids": (edit_json(EP2, _set(["id"], "ep-0001")), EP2, "id", "duplicate"),
    "wrong_type_success": (edit_json(EP1, _set(["success"], "yes")), EP1, "success", "true, false or null"),
    "wrong_type_goal": (edit_json(EP2, _set(["goal"], 42)), EP2, "goal", "expected str"),
    "wrong_type_clickable": (edit_json(EP1, _set(["steps", 0, "elements", 1, "clickable"], "true")), EP1,
                             "steps[0].elements[1].clickable", "expected bool"),
    "wrong_type_subgoal_index": (edit_json(EP1, _set(["steps", 1, "subgoal", "index"], "1")), EP1,
                                 "steps[1].subgoal.index", "expected int"),
    "manifest_count_mismatch": (edit_json("manifest.json", _set(["episodes"], 3)), "manifest.json", "episodes",
                                "manifest counts"),
    "missing_manifest": (lambda r: (r / "manifest.json").unlink(), "manifest.json", "file", "missing"),
}


def main() -> None:
    for p in HERE.iterdir():
        if p.is_dir():
            shutil.rmtree(p)
    base_store(HERE / "valid" / "store")
    assert len(load_episodes(HERE / "valid" / "store")) == 2
    for name, (corrupt, file, field, message) in CASES.items():
        root = HERE / name / "store"
        shutil.copytree(HERE / "valid" / "store", root)
        corrupt(root)
        (HERE / name / "expect.json").write_text(json.dumps({"file": file, "field": field, "message": message}, indent=1) + "\n")
    print(f"wrote {len(CASES)} cases and the valid base store under {HERE}")


if __name__ == "__main__":
    main()

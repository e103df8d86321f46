"""Rebuild the bad-input corpus: a tiny valid episode store, then one corrupted copy per case.

Run from the repository root: ``python tests/data/bad_inputs/make_corpus.py``. Each case
folder holds ``store/`` (the corrupted store) and ``expect.json`` (the file, relative to
the store, and the field an error must name, plus a fragment of its message).
"""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any, Callable

from PIL import Image

from guimem.core.data import Action, Episode, Observation, Step, SubgoalLabel, UIElement
from guimem.core.store import load_episodes, png_bytes, save_episodes, screen_path

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


def png_declaring(width: int, height: int) -> bytes:
    """A valid-looking PNG whose header declares ``width`` x ``height`` pixels: tiny on disk, huge decoded."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


def edit_text(rel: str, change: Callable[[str], str]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        (root / rel).write_text(change((root / rel).read_text()))
    return apply


def edit_json(rel: str, change: Callable[[dict], Any]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        d = json.loads((root / rel).read_text())
        change(d)
        (root / rel).write_text(json.dumps(d, indent=1))  # allow_nan: NaN is written as the bare token
    return apply


def shot(root: Path, step: int | None, rel: str = EP1) -> Path:
    d = json.loads((root / rel).read_text())
    return root / (d["final"] if step is None else d["steps"][step])["screenshot"]


def rehash(step: int, content: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    """Replace the screenshot of EP1's ``step`` by ``content(old bytes)`` stored under its own hash, so
    that its name is right and only its content is bad."""
    def apply(root: Path) -> None:
        d = json.loads((root / EP1).read_text())
        old = d["steps"][step]["screenshot"]
        data = content((root / old).read_bytes())
        (root / old).unlink()
        (root / screen_path(data)).write_bytes(data)
        d["steps"][step]["screenshot"] = screen_path(data)
        (root / EP1).write_text(json.dumps(d, indent=1))
    return apply


def swap_screens(a: int, b: int) -> Callable[[Path], None]:
    """Swap the bytes of the screenshots of EP1's steps ``a`` and ``b`` (names stay)."""
    def apply(root: Path) -> None:
        pa, pb = shot(root, a), shot(root, b)
        da, db = pa.read_bytes(), pb.read_bytes()
        pa.write_bytes(db)
        pb.write_bytes(da)
    return apply


def folder_like_episode(root: Path) -> None:
    """A folder named like a third episode file, the manifest counting it."""
    (root / "episodes" / "ep-0003.json").mkdir()
    (root / "episodes" / "ep-0003.json" / "note.txt").write_text("a folder, not an episode")
    edit_json("manifest.json", _set(["episodes"], 3))(root)


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


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
    "truncated_screenshot": (rehash(3, lambda data: data[:60]), EP1, "steps[3].screenshot", "does not decode"),
    "not_an_image": (rehash(0, lambda _: b"hello"), EP1, "steps[0].screenshot", "is not a PNG"),
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
    "duplicate_ids": (edit_json(EP2, _set(["id"], "ep-0001")), EP2, "id", "does not match its file name"),
    "wrong_type_success": (edit_json(EP1, _set(["success"], "yes")), EP1, "success", "true, false or null"),
    "wrong_type_goal": (edit_json(EP2, _set(["goal"], 42)), EP2, "goal", "expected str"),
    "wrong_type_clickable": (edit_json(EP1, _set(["steps", 0, "elements", 1, "clickable"], "true")), EP1,
                             "steps[0].elements[1].clickable", "expected bool"),
    "wrong_type_subgoal_index": (edit_json(EP1, _set(["steps", 1, "subgoal", "index"], "1")), EP1,
                                 "steps[1].subgoal.index", "expected int"),
    "manifest_count_mismatch": (edit_json("manifest.json", _set(["episodes"], 3)), "manifest.json", "episodes",
                                "manifest counts"),
    "missing_manifest": (lambda r: (r / "manifest.json").unlink(), "manifest.json", "file", "missing"),
    # screenshots: content against the hash in the name, pixel cap before decoding, store paths
    "hash_mismatch": (lambda r: shot(r, 1).write_bytes(png_bytes(Image.new("RGB", (18, 36), "red"))), EP1,
                      "steps[1].screenshot", "does not match its content hash"),
    "swapped_screenshots": (swap_screens(0, 2), EP1, "steps[0].screenshot", "does not match its content hash"),
    "pixel_bomb_header": (rehash(2, lambda _: png_declaring(100_000, 100_000)), EP1, "steps[2].screenshot",
                          "100000x100000 pixels, over the cap"),
    "screenshot_not_a_screen": (edit_json(EP1, _set(["steps", 1, "screenshot"], EP2)), EP1, "steps[1].screenshot",
                                "screens/<16 hex digits>.png"),
    "screenshot_absolute": (edit_json(EP2, _set(["final", "screenshot"], "/etc/passwd")), EP2, "final.screenshot",
                            "inside the store"),
    "screenshot_a_number": (edit_json(EP1, _set(["steps", 0, "screenshot"], 7)), EP1, "steps[0].screenshot",
                            "expected str, got int"),
    # ids and counts
    "unsafe_id": (edit_json(EP1, _set(["id"], "../../x")), EP1, "id", "not a safe file name"),
    "id_not_file_name": (edit_json(EP1, _set(["id"], "ep-0009")), EP1, "id", "does not match its file name"),
    "steps_count_mismatch": (edit_json("manifest.json", _set(["steps"], 10)), "manifest.json", "steps",
                             "manifest counts 10 steps, the episodes hold 9"),
    "screens_count_mismatch": (edit_json("manifest.json", _set(["screens"], 10)), "manifest.json", "screens",
                               "manifest counts 10 screens, the folder holds 11"),
    "extra_screen_file": (lambda r: (r / "screens" / "0123456789abcdef.png").write_bytes(b"x"), "manifest.json",
                          "screens", "the folder holds 12"),
    "count_negative": (edit_json("manifest.json", _set(["episodes"], -1)), "manifest.json", "episodes",
                       "must be in [0, inf]"),
    "count_a_float": (edit_json("manifest.json", _set(["steps"], 9.0)), "manifest.json", "steps",
                      "expected an integer, got float"),
    "manifest_a_list": (lambda r: (r / "manifest.json").write_text("[]"), "manifest.json", "manifest",
                        "expected an object"),
    "manifest_other_format": (edit_json("manifest.json", _set(["format"], "guimem.memory_graph")), "manifest.json",
                              "format", "expected 'guimem.episodes'"),
    "manifest_newer_version": (edit_json("manifest.json", _set(["version"], 2)), "manifest.json", "version",
                               "reads version 1"),
    "manifest_meta_nan": (edit_json("manifest.json", _set(["meta", "purpose"], float("nan"))), "manifest.json",
                          "meta.purpose", "finite"),
    "missing_episodes_folder": (lambda r: shutil.rmtree(r / "episodes"), "episodes", "episodes", "missing folder"),
    # bytes and JSON that used to escape as other exceptions
    "folder_named_like_json": (folder_like_episode, "episodes/ep-0003.json", "file", "is a folder"),
    "not_utf8": (lambda r: (r / EP2).write_bytes(b'{"id": "\xff"}'), EP2, "file", "not UTF-8"),
    "byte_order_mark": (lambda r: (r / EP2).write_bytes(b"\xef\xbb\xbf" + (r / EP2).read_bytes()), EP2, "json",
                        "malformed JSON"),
    "lone_surrogate": (edit_json(EP2, _set(["goal"], "dark \ud800 mode")), EP2, "goal", "lone surrogate"),
    "integer_of_5000_digits": (edit_text(EP1, lambda t: t.replace('"seed": 1', '"seed": ' + "9" * 5000)), EP1, "json",
                               "unreadable JSON"),
    "integer_of_400_digits": (edit_json(EP1, _set(["steps", 1, "action", "point", 0], 10**400)), EP1,
                              "steps[1].action.point[0]", "[0, 1]"),
    "deep_nesting": (edit_json(EP2, _set(["provenance", "deep"], _nested(100))), EP2, "json", "nested deeper than 64"),
    "episode_a_list": (lambda r: (r / EP2).write_text("[]"), EP2, "episode", "expected an object, got list"),
    "action_a_list": (edit_json(EP1, _set(["steps", 2, "action"], [])), EP1, "steps[2].action",
                      "expected object, got list"),
    "provenance_a_list": (edit_json(EP2, _set(["provenance"], [1])), EP2, "provenance", "expected object, got list"),
    "provenance_nan": (edit_json(EP1, _set(["provenance", "seed"], float("nan"))), EP1, "provenance.seed", "finite"),
    "subgoal_index_negative": (edit_json(EP2, _set(["steps", 0, "subgoal", "index"], -1)), EP2,
                               "steps[0].subgoal.index", "must be in [0, 2147483647]"),
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

"""Small recordings in each importer's format, written into a test's folder: agent-run folders,
AITW JSON, generic JSON lines and LearnGUI episode files, each with its screenshots (shared by the
importers' unit tests and their bad-input cases)."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image


def line(**arguments) -> str:
    return json.dumps({"name": "mobile_use", "arguments": arguments})


def write_run(folder: Path, lines: list[str], screens: int | None = None, size=(40, 80), fmt: str = "PNG") -> Path:
    """A run folder: ``action.jsonl`` and ``screens`` screenshots (one per line by default), each a
    distinct flat colour, saved as ``fmt`` under a ``.png`` name."""
    folder.mkdir(parents=True)
    (folder / "action.jsonl").write_text("\n".join(lines) + "\n")
    for i in range(len(lines) if screens is None else screens):
        Image.new("RGB", size, (10 * i, 200 - 10 * i, 90)).save(folder / f"screenshot_{i}.png", format=fmt)
    return folder


def aitw_step(ep="9001", step=0, **kw) -> dict:
    return {"ep_id": ep, "goal": "search for hotels in Paris", "img_filename": f"general/{ep}_{step}",
            "action_type_id": 4, "action_type_text": "click", "touch": [0.3, 0.6], "lift": [0.3, 0.6], "type_text": "",
            "annot_position": [0.55, 0.2, 0.1, 0.25], **kw}


def write_aitw(root: Path, episodes: dict[str, list[list[dict]]] | list) -> Path:
    for eps in (episodes.values() if isinstance(episodes, dict) else [episodes]):
        for steps in eps:
            for s in steps:
                if isinstance(s, dict) and isinstance(s.get("img_filename"), str):
                    (root / "images" / s["img_filename"]).parent.mkdir(parents=True, exist_ok=True)
                    Image.new("RGB", (30, 60), (len(s["img_filename"]) * 7 % 255, 9, 9)).save(
                        root / "images" / f"{s['img_filename']}.png")
    (root / "aitw.json").write_text(json.dumps(episodes))
    return root / "aitw.json"


UI_XML = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0"><node index="0" text="Wi-Fi" resource-id="" class="android.widget.Switch" content-desc=""
 clickable="true" checked="false" bounds="[0,20][40,30]" /></hierarchy>"""


def write_jsonl(root: Path, lines: list[dict], n_screens: int = 3) -> Path:
    (root / "shots").mkdir(parents=True)
    for i in range(n_screens):
        Image.new("RGB", (40, 80), (40 * i, 0, 0)).save(root / "shots" / f"{i}.png")
    (root / "dumps").mkdir()
    (root / "dumps" / "0.xml").write_text(UI_XML)
    (root / "steps.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return root / "steps.jsonl"


def write_learngui(root: Path, episodes: dict) -> Path:
    (root / "screenshot").mkdir(parents=True)
    for i in range(4):
        Image.new("RGB", (1000, 2000), (60 * i, 5, 5)).save(root / "screenshot" / f"s{i}.png")
    (root / "low_level_instructions.json").write_text(json.dumps(episodes))
    return root / "low_level_instructions.json"


def learngui_step(i: int, action: str) -> dict:
    return {"step_id": i + 1, "image_path": f"s{i % 4}.png", "action": action, "action_description": f"step {i}"}

"""The hand-made store of :mod:`memory_fixtures` saved as an episode store, for the memories' bad-input
cases (and the consistency cases'): the ``store`` fixture, memories built on it, and edits of a saved
memory's ``memory.json`` and ``items.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from guimem.core.store import load_episodes, png_bytes, save_episodes, screen_path
from guimem.smg.memories import build_memory
from memory_fixtures import SCREENS, TAP_DISPLAY, TAP_GEAR, TAP_SETTINGS, draw_screen, embedders, episode, subgoal

STORED = {name: screen_path(png_bytes(draw_screen(name))) for name in SCREENS}  # each screen's path in the store


@pytest.fixture
def store(tmp_path) -> tuple[Path, list, list]:
    """The hand-made three screens as an episode store (a memory reads only such a store's screens),
    two episodes and their subgoals; the screens also under their hand names (screens/home.png ...)
    for the episodes added in code."""
    hand = [episode("e0", "turn on dark mode", [("home", TAP_SETTINGS, "a"), ("list", TAP_DISPLAY, "b")], "detail"),
            episode("e1", "turn on dark mode", [("home", TAP_SETTINGS, "a"), ("list", TAP_GEAR, "b")], "list")]
    save_episodes(hand, {f"screens/{name}.png": draw_screen(name) for name in SCREENS}, tmp_path)
    eps = load_episodes(tmp_path)
    for name in SCREENS:
        draw_screen(name).save(tmp_path / "screens" / f"{name}.png")
    subs = [subgoal(eps[0], 0, 0, 0, "open the settings", "yes"), subgoal(eps[0], 1, 1, 1, "open display", "yes"),
            subgoal(eps[1], 0, 0, 0, "open the settings", "yes"), subgoal(eps[1], 1, 1, 1, "open display", "no")]
    return tmp_path, eps, subs


def build(name: str, store, **params: Any):
    root, eps, subs = store
    return build_memory(name, eps, subs, root, *embedders(root), tau=0.99, theta=0.9, **params)


def meta(**values: Any) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        m = json.loads((folder / "memory.json").read_text())
        for key, value in values.items():
            target = m["style"] if key.startswith("style_") else m
            target[key.removeprefix("style_")] = value
        (folder / "memory.json").write_text(json.dumps(m))
    return mutate


def item(line: int, **values: Any) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        rows = [json.loads(s) for s in (folder / "items.jsonl").read_text().splitlines()]
        rows[line].update(values)
        (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return mutate


def items(change: Callable[[list[str]], list[str]]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        lines = (folder / "items.jsonl").read_text().splitlines()
        (folder / "items.jsonl").write_text("".join(s + "\n" for s in change(lines)))
    return mutate

"""The hand-made three-screen store the memories' tests share (their own, the retrieval evaluation's
and the bad-input cases'): screens home, list and detail drawn from their elements, the taps between
them, episodes and subgoals built from paths, the ``store`` fixture and the embedders a memory reads
with (pixels and hashed words, cached under the store)."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw

from guimem.core.data import Action, Episode, Observation, Step, Subgoal, SubgoalLabel, UIElement
from guimem.core.store import load_episodes, save_episodes
from guimem.models.embedding import (
    CachedImageEmbedder,
    CachedTextEmbedder,
    EmbeddingCache,
    HashingTextEmbedder,
    PixelEmbedder,
)

SETTINGS = UIElement("settings", "icon", text="Settings", bounds=(0.1, 0.3, 0.4, 0.4), clickable=True)
SEARCH = UIElement("search", "field", text="Search", bounds=(0.1, 0.05, 0.9, 0.12), clickable=True)
DISPLAY = UIElement("display", "list_item", text="Display", bounds=(0.0, 0.2, 1.0, 0.3), clickable=True)
GEAR = UIElement("gear", "icon", bounds=(0.85, 0.02, 0.98, 0.08), clickable=True)
TITLE_LIST = UIElement("t", "text", text="Settings", bounds=(0.05, 0.03, 0.6, 0.1))
TITLE_DETAIL = UIElement("t", "text", text="Display", bounds=(0.05, 0.03, 0.6, 0.1))
SCREENS = {"home": (SEARCH, SETTINGS), "list": (TITLE_LIST, DISPLAY, GEAR), "detail": (TITLE_DETAIL,)}
COLOURS = {"home": (230, 90, 40), "list": (40, 160, 90), "detail": (60, 80, 220)}


def draw_screen(name: str) -> Image.Image:
    im = Image.new("RGB", (90, 180), (245, 245, 245))
    d = ImageDraw.Draw(im)
    for el in SCREENS[name]:
        x0, y0, x1, y1 = (v * s for v, s in zip(el.bounds, (90, 180, 90, 180)))
        d.rectangle((x0, y0, x1, y1), fill=COLOURS[name] if el.clickable else (30, 30, 30))
    return im


def obs(name: str) -> Observation:
    return Observation(f"screens/{name}.png", SCREENS[name], screen=name)


TAP_SETTINGS = Action("tap", (0.2, 0.35))
TAP_DISPLAY = Action("tap", (0.5, 0.25))
TAP_GEAR = Action("tap", (0.9, 0.05))


def episode(eid: str, goal: str, path: list[tuple[str, Action, str]], final: str) -> Episode:
    steps = tuple(Step(obs(screen), action, SubgoalLabel(i, kind, kind)) for i, (screen, action, kind) in enumerate(path))
    return Episode(eid, "settings", goal, steps, obs(final), success=True)


def subgoal(ep: Episode, index: int, first: int, last: int, text: str, success: str) -> Subgoal:
    o = ep.observations
    return Subgoal(ep.id, index, first, last, o[first].screenshot, o[last + 1].screenshot, text,
                   effect=f"went from {o[first].screen} to {o[last + 1].screen}", behaviour="tap", success=success,
                   successor=None, goal=ep.goal, app=ep.app,
                   actions=tuple(s.action for s in ep.steps[first:last + 1]))


@pytest.fixture()
def store(tmp_path):
    (tmp_path / "screens").mkdir()
    for name in SCREENS:
        draw_screen(name).save(tmp_path / "screens" / f"{name}.png")
    eps = [
        episode("e0", "turn on dark mode", [("home", TAP_SETTINGS, "open_settings"),
                                            ("list", TAP_DISPLAY, "open_display")], "detail"),
        episode("e1", "turn on dark mode", [("home", TAP_SETTINGS, "open_settings"),
                                            ("list", TAP_GEAR, "open_display")], "list"),  # a dead end
        episode("e2", "search for milk", [("home", TAP_SETTINGS, "open_settings"),
                                          ("list", TAP_DISPLAY, "open_display")], "detail"),
    ]
    subs = [subgoal(eps[0], 0, 0, 0, "open the settings", "yes"), subgoal(eps[0], 1, 1, 1, "open display", "yes"),
            subgoal(eps[1], 0, 0, 0, "open the settings", "yes"), subgoal(eps[1], 1, 1, 1, "open display", "no"),
            subgoal(eps[2], 0, 0, 0, "open the settings", "yes"), subgoal(eps[2], 1, 1, 1, "open display", "yes")]
    return tmp_path, eps, subs


def as_episode_store(store):
    """The hand-made store saved as an episode store (a loaded memory reads only such a store's
    screens): its root, episodes and subgoals, the screenshots named by content."""
    root, eps, subs = store
    save_episodes(eps, {f"screens/{name}.png": draw_screen(name) for name in SCREENS}, root / "world")
    stored = {e.id: e for e in load_episodes(root / "world")}
    return root / "world", [stored[e.id] for e in eps], [
        subgoal(stored[s.episode_id], s.index, s.first_step, s.last_step, s.text, s.success) for s in subs]


def embedders(tmp_path):
    return (CachedImageEmbedder(PixelEmbedder(), EmbeddingCache(tmp_path / "cache")),
            CachedTextEmbedder(HashingTextEmbedder(), EmbeddingCache(tmp_path / "cache")))

"""Work that grows with its input grows linearly: rendering a memory image whose typed text is long,
fitting a label of the synthetic phone, and rule segmentation of a long episode.

Each case times the same work at two input sizes, ``n`` and ``8 n``, in one run (the best of a few
repeats of each, the sizes taking turns, so a busy machine slows both alike) and compares the ratio of the times with the
ratio of the sizes. Linear work gives a ratio of about 8 (less where a fixed cost dominates), work
that grows with the square of its input about 64: the test fails above ``2.5 x 8 = 20``. It is a
ratio, never a wall-clock bound, so it holds on a slow machine as on a fast one.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import pytest
from PIL import Image

import handmade_episodes as hm
from guimem.core.data import Action, Episode
from guimem.phone.render.primitives import fit_text
from guimem.smg.memories.items import MemoryItem, Retrieved
from guimem.smg.memories.render import RenderStyle, render_image
from guimem.smg.segmenters import RuleSegmenter

GROWTH = 8  # the larger input is this many times the smaller
MARGIN = 2.5  # the time ratio may exceed GROWTH by this factor (timing noise, caches), not more
REPEATS = 5  # best of, the two sizes taking turns
BUDGET_S = 3.0  # once the runs of a size add up to this, it is not repeated (a regression is clear already)


def best_times(small: Callable[[], object], large: Callable[[], object]) -> tuple[float, float]:
    """The shortest of up to :data:`REPEATS` runs of each, the two taking turns (small, large, small,
    ...), so that a burst of load from another process slows runs of both sizes, not one size alone."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(REPEATS):
        for work, kept in ((small, times[0]), (large, times[1])):
            if sum(kept) < BUDGET_S:
                start = time.perf_counter()
                work()
                kept.append(time.perf_counter() - start)
    return min(times[0]), min(times[1])


def assert_linear(make: Callable[[int], Callable[[], object]], n: int) -> None:
    """``make(size)`` builds the work on an input of ``size`` (outside the timing); its time at
    ``GROWTH * n`` is at most ``MARGIN * GROWTH`` times its time at ``n``."""
    small, large = make(n), make(GROWTH * n)
    small()  # warm caches, fonts and imports before either is timed
    t_small, t_large = best_times(small, large)
    ratio = t_large / max(t_small, 1e-6)
    assert ratio < MARGIN * GROWTH, (f"{GROWTH}x the input took {ratio:.1f}x the time "
                                     f"({t_small * 1e3:.1f} ms -> {t_large * 1e3:.1f} ms): more than linear")


# ----------------------------------------------------------------------------- rendering
@pytest.fixture(scope="module")
def store_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("store")
    (root / "screens").mkdir()
    Image.new("RGB", (90, 180), (40, 40, 40)).save(root / "screens/a.png")
    return root


def typed_item(text: str) -> MemoryItem:
    """A remembered subgoal that taps a field, types ``text`` and opens an app named ``text``: two
    labels of the memory image carry the whole text."""
    actions = (Action("tap", (0.5, 0.2)), Action("type", text=text), Action("open_app", text=text))
    return MemoryItem("smg:e#0", "subgoal", "e", 0, 2, "yes", "type a note", "type it", "", "screens/a.png",
                      "screens/a.png", actions, ("tap", "type", "open"), (None, None, None))


def test_rendering_a_memory_image_is_linear_in_its_typed_text(store_root):
    def make(n: int) -> Callable[[], object]:
        retrieved = Retrieved("smg", (typed_item("milk and eggs " * (n // 14 + 1)),))
        return lambda: render_image(retrieved, store_root, RenderStyle())
    assert_linear(make, 500)


def test_fitting_a_phone_label_is_linear_in_its_text():
    runs = itertools.count()  # every run fits texts never fitted before: fit_text's cache is no help

    def make(n: int) -> Callable[[], object]:
        body = "a long row title " * (n // 17 + 1)
        return lambda: [fit_text(f"{next(runs)} {body}", 11, 150) for _ in range(4)]
    assert_linear(make, 250)


# ----------------------------------------------------------------------------- segmentation
def mixed_episode(n: int) -> Episode:
    """``n`` steps of the hand-made episodes' steps in turn (taps, typing, windows, scrolls, detours,
    noise; their ``done`` left out), ending on the first one's final screen."""
    pool = [s for make in hm.ALL for s in make().steps if s.action.type not in ("done", "impossible")]
    base = hm.dark_theme_episode()
    return replace(base, steps=tuple(pool[i % len(pool)] for i in range(n)))


def waiting_episode(n: int) -> Episode:
    """``n`` taps that change nothing (noise), one after the other, on the same screen."""
    base = hm.new_note_episode()
    stray = base.steps[2]  # the tap on empty space
    return replace(base, steps=(stray,) * n, final=stray.observation)


@pytest.mark.parametrize("episode", [mixed_episode, waiting_episode], ids=["mixed", "noise"])
def test_rule_segmentation_is_linear_in_the_episode_length(episode):
    def make(n: int) -> Callable[[], object]:
        ep = episode(n)
        return lambda: RuleSegmenter().segment(ep)
    assert_linear(make, 400)

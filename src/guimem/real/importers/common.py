"""What every importer shares: safe episode ids from foreign names, screenshots read lazily (and
optionally downscaled) on their way into the store, and the one way an import is written.

An importer parses *everything* first — every action line, every screenshot's presence and
header — and only then writes, through :func:`guimem.core.store.save_episodes` (atomic: a reader
sees the old store or the new one; a folder that is not an episode store is refused). So bad
input raises a :class:`~guimem.core.data.DataError` naming the file and the field, and nothing
is written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
from PIL import Image

from guimem.core.data import ENDING_TYPES, DataError, Episode, Observation, Step, SubgoalLabel
from guimem.core.executor import Executor, LocalExecutor, RayExecutor
from guimem.core.io import check_number, file_inside, refuse_overlap
from guimem.core.progress import progress_bar
from guimem.core.store import MAX_PIXELS, open_image, save_episodes
from guimem.real.ocr import STATUS_BAR, OcrReader

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_ID = 128  # the store's limit on an episode id (it is a file name)


def safe_id(name: str, taken: set[str]) -> str:
    """An episode id for the foreign ``name``: runs of characters a file name may not hold become
    ``-``, the result is cut to fit, and a name that had to change (or that collides with one in
    ``taken``) gets the first 8 hex digits of its SHA-256, so two names never share an id. The id
    is added to ``taken``; keep ``name`` itself in the episode's provenance."""
    base = _UNSAFE.sub("-", name).lstrip("-._") or "episode"  # a file name that starts with a letter or digit
    if base == name and name not in taken and len(name) <= MAX_ID:
        taken.add(name)
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    for width in (8, 16, 64):
        candidate = f"{base[:MAX_ID - width - 1]}-{digest[:width]}"
        if candidate not in taken:
            taken.add(candidate)
            return candidate
    raise DataError("id", f"cannot make a unique id for {name!r:.80}")  # pragma: no cover - a full SHA-256 collision


def goals_from_names(episodes: Sequence[Episode]) -> str | None:
    """A warning when episodes took their goal from their run folder's name (``provenance["goal_source"]``),
    which recorders often cut short (at 50 characters, say); None when every goal was given."""
    named = [e for e in episodes if e.provenance.get("goal_source") == "folder name"]
    if not named:
        return None
    return (f"warning: {len(named)} of {len(episodes)} runs have no goal but their folder's name "
            f"(e.g. {named[0].goal!r:.70}), which may be the goal cut short; give the goals with --goals "
            "GOALS.json (a JSON object: run folder name -> goal text)")


def check_image_file(root: Path, rel: str, field: str, where: str | None = None) -> tuple[Path, tuple[int, int]]:
    """The screenshot ``rel`` of the source folder ``root``: its path and ``(width, height)`` read
    from its header (no decoding). The path goes through :func:`~guimem.core.io.file_inside` first,
    so a name with ``..``, an absolute one or a symbolic link that leads out of ``root`` is refused
    before any byte is read (an import copies what it reads into the store: a link must not carry
    a file from elsewhere in). A missing, unreadable or oversized file is a DataError naming the
    file and ``field``; a path that leaves ``root``, one at ``where`` (default: ``root``)."""
    path = file_inside(root, rel, field, where)
    if not path.is_file():
        raise DataError(field, "missing", str(path))
    try:
        with Image.open(path) as im:
            size = im.size
    except (OSError, Image.DecompressionBombError, ValueError) as err:
        raise DataError(field, f"not an image PIL can read ({err})", str(path)) from None
    if size[0] < 1 or size[1] < 1 or size[0] * size[1] > MAX_PIXELS:
        raise DataError(field, f"{size[0]}x{size[1]} pixels: outside 1..{MAX_PIXELS} pixels", str(path))
    return path, size


def check_step_numbers(numbers: Sequence[int | None], fields: Sequence[str], starts: tuple[int, ...]) -> None:
    """Refuse step numbers a recording gives that do not match the order of its steps.

    ``numbers[i]`` is the number the source gives its ``i``-th step (None: it gives none) and
    ``fields[i]`` the field that holds it. The numbers must count up by one in the order the steps
    are stored, from one of ``starts`` (AITW counts from 0, LearnGUI from 1): an importer keeps the
    steps in the order it reads them, so a duplicated, skipped or swapped number means the file's
    order is not the episode's, and importing it as read would replay the wrong action on each
    screen. A DataError names the step's field (and the other step of a duplicate)."""
    base, seen = None, {}
    for i, (n, field) in enumerate(zip(numbers, fields)):
        if n is None:
            continue
        if n in seen:
            raise DataError(field, f"step number {n} again: {seen[n]} has it too (each step of an episode "
                                   "has its own number)")
        seen[n] = field
        if base is None:
            if n - i not in starts:
                first = " or ".join(str(s) for s in starts)
                raise DataError(field, f"step number {n} at position {i}: the steps count from {first}, "
                                       f"so this one should be {starts[0] + i}")
            base = n - i
        elif n != base + i:
            how = "skips a number" if n > base + i and base + i not in numbers[i + 1:] else "is out of order"
            raise DataError(field, f"step number {n} at position {i} {how}: expected {base + i} "
                                   f"(numbers count up by one from {base} in the order of the steps)")


def check_images_folder(images: Path, store: str | os.PathLike) -> None:
    """Refuse a ``store`` that is, lies inside or holds the folder ``images`` screenshots are read
    from (:func:`~guimem.core.io.refuse_overlap`, both ways): written there, the store would
    replace or shadow the screenshots the import reads, as one overlapping its source file would."""
    refuse_overlap(images, store, "store")


def downscaled_size(size: tuple[int, int], max_side: int | None) -> tuple[int, int]:
    """``size`` shrunk (aspect kept, at least one pixel a side) so that its longer side is at most
    ``max_side``; unchanged when it already fits or ``max_side`` is None."""
    w, h = size
    if not max_side or max(w, h) <= max_side:
        return size
    scale = max_side / max(w, h)
    return (max(1, round(w * scale)), max(1, round(h * scale)))


def check_max_side(max_side: int | None) -> None:
    """A DataError unless ``max_side`` (downscale to this longer side) is None or a positive integer."""
    if max_side is not None:
        check_number(max_side, "max_side", 1, integer=True)


class ScreenshotFiles(Mapping):
    """The images of an import as :func:`save_episodes` reads them: screenshot key -> image, each
    file opened only when the store writes it (so an import of thousands of full-size screens holds
    one in memory at a time), converted to RGB and downscaled to ``max_side`` if given."""

    def __init__(self, files: Mapping[str, Path], max_side: int | None = None):
        check_max_side(max_side)
        self.files, self.max_side = dict(files), max_side

    def __getitem__(self, key: str) -> Image.Image:
        rgb = open_image(self.files[key], "screenshot")  # the one decoder: a PNG cut short is refused, not padded
        size = downscaled_size(rgb.size, self.max_side)
        return rgb if size == rgb.size else rgb.resize(size, Image.LANCZOS)

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)


LEAVES_SCREEN = ENDING_TYPES  # actions that do not touch the phone: done, impossible, answer


def final_screen(steps: Sequence[Step], recorded: Observation | None) -> tuple[Observation | None, str]:
    """The final screen of an episode of ``steps`` and what ``provenance["final_screen"]`` says
    of it: ``recorded`` when the recording has the screen after the last action; ``repeated``
    (the last step's screen) when it has not but the last action leaves the screen as it is
    (:data:`LEAVES_SCREEN`); else None, ``not recorded`` — a tap's outcome is never invented."""
    if recorded is not None:
        return recorded, "recorded"
    if steps[-1].action.type in LEAVES_SCREEN:
        return steps[-1].observation, "repeated"
    return None, "not recorded"


def map_observations(episode: Episode, fn: Callable[[Observation, int], Observation]) -> Episode:
    """``episode`` with every screen replaced by ``fn(screen, i)``: ``i`` the step's index, and
    ``len(episode.steps)`` for the final screen (when recorded)."""
    steps = tuple(dataclasses.replace(s, observation=fn(s.observation, i)) for i, s in enumerate(episode.steps))
    final = fn(episode.final, len(episode.steps)) if episode.final is not None else None
    return dataclasses.replace(episode, steps=steps, final=final)


OCR_CHUNK = 8  # screens per unit of OCR work sent to a worker


@dataclass(frozen=True)
class ReadScreens:
    """The task a worker runs for :func:`with_ocr`: an :class:`~guimem.real.ocr.OcrReader` made once
    per worker (with the settings and cache of the caller's), then chunk after chunk of screenshot
    files, each read as the store will hold it (downscaled to ``max_side``)."""

    min_score: float
    status_bar: float
    cache_dir: str | None
    max_side: int | None

    def setup(self) -> OcrReader:
        return OcrReader(self.min_score, self.status_bar, self.cache_dir)

    def run(self, reader: OcrReader, files: list[str]) -> list[tuple]:
        return [reader.elements(ScreenshotFiles({f: Path(f)}, self.max_side)[f], f) for f in files]


def with_ocr(episodes: Sequence[Episode], images: ScreenshotFiles, reader: OcrReader,
             executor: Executor | None = None) -> list[Episode]:
    """``episodes`` with every screen that has no elements given the lines ``reader`` reads on it,
    as it will be stored (downscaled). With an ``executor`` of several workers (or on Ray), the
    screens are read there in chunks of :data:`OCR_CHUNK`, each worker with a reader of its own
    (same settings, same cache); results come back in order."""
    todo = list(dict.fromkeys(o.screenshot for ep in episodes for o in ep.recorded_observations if not o.elements))
    offload = isinstance(executor, RayExecutor) or (isinstance(executor, LocalExecutor) and executor.workers > 1)
    if offload and todo:
        task = ReadScreens(reader.min_score, reader.status_bar,
                           str(reader.cache_dir) if reader.cache_dir is not None else None, images.max_side)
        chunks = [todo[i: i + OCR_CHUNK] for i in range(0, len(todo), OCR_CHUNK)]
        parts = executor.map(task, [[str(images.files[k]) for k in chunk] for chunk in chunks])
        read = {k: e for chunk, part in zip(chunks, parts) for k, e in zip(chunk, part)}
    else:  # a bar for whoever watches: a terminal (the import's command line), a notebook, a stage's runner
        read = {k: reader.elements(images[k], str(images.files[k]))
                for k in progress_bar(todo, desc="OCR", unit="screen", disable=None, leave=False)}

    def see(obs: Observation, _: int) -> Observation:
        return obs if obs.elements else dataclasses.replace(obs, elements=read[obs.screenshot])

    return [map_observations(ep, see) for ep in episodes]


def _labelled(episodes: Sequence[Episode], labels: Mapping[str, Any], file: str,
              ) -> Iterator[tuple[Episode, Any, str]]:
    """Each episode with its entry in the label file ``file`` (None when it has none) and that
    entry's field name; a name that no episode has (its ``provenance["source_name"]``) is a DataError."""
    names = {ep.provenance.get("source_name") for ep in episodes}
    unknown = sorted(set(labels) - names)
    if unknown:
        raise DataError(f"{file}[{unknown[0]!r:.60}]", f"no imported episode has this source name "
                                                        f"({len(unknown)} such names)")
    for ep in episodes:
        name = ep.provenance.get("source_name")
        yield ep, labels.get(name), f"{file}[{name!r:.60}]"


def with_labels(episodes: Sequence[Episode], labels: Mapping[str, Any]) -> list[Episode]:
    """``episodes`` with each screen's type from ``labels``: for an episode's source name (its
    ``provenance["source_name"]``), the type of every step's screen in order, and optionally one
    more for the final screen when one was recorded (a repeated final screen takes its last
    step's type). Kept in :attr:`Observation.screen`, which only analyses read (node purity). A
    name without episode, or a list of the wrong length, is a DataError naming the label file's key."""
    out = []
    for ep, types, where in _labelled(episodes, labels, "labels"):
        if types is None:
            out.append(ep)
            continue
        n = len(ep.steps)
        own_final = ep.final is not None and ep.provenance.get("final_screen") != "repeated"
        lengths = (n, n + 1) if own_final else (n,)
        if not isinstance(types, list) or len(types) not in lengths or not all(
                isinstance(t, str) and t.strip() for t in types):
            expected = f"{n} (or {n + 1}, with the final screen)" if len(lengths) == 2 else str(n)
            raise DataError(where, f"expected a list of {expected} screen types, got {types!r:.80}")
        final_type = types[n] if len(types) > n else (types[n - 1] if ep.final == ep.steps[-1].observation else None)
        typed = [*types[:n], final_type]
        out.append(map_observations(ep, lambda obs, i: dataclasses.replace(obs, screen=typed[i])))
    return out


PIXEL_NOISE = 8  # levels (of 255) a pixel's channel may move without counting as changed (JPEG, scaling)


def unchanged_screens(episode: Episode, images: Mapping[str, Image.Image], status_bar: float = STATUS_BAR) -> Episode:
    """``episode`` with every screen that is the one before it but for the status bar (no pixel
    below the status bar moved by more than :data:`PIXEL_NOISE` in a channel, and the same
    elements) given that screen's screenshot, so that "nothing changed" is seen as it is.

    A phone's clock, battery and notification icons change between any two screenshots, so without
    this only byte-identical screenshots count as one screen. An image embedding does not tell the
    two cases apart: on the bundled sample, the day view of two consecutive dates has an
    EfficientNet cosine of 0.98-0.99, while real "nothing changed" pairs are pixel-identical below the
    status bar. No other change is tolerated, however small: a ticked box or a digit is what a tap
    did (a blinking cursor, likewise, keeps two screens apart). The indices of the screens given
    their predecessor's screenshot for a difference in the status bar (not merely for equal pixels,
    which the store keeps once anyway) are kept in ``provenance["same_screen_as_before"]``. Two
    decoded screens are held at a time."""
    screens = list(episode.recorded_observations)
    repeated = episode.final is not None and episode.final == episode.steps[-1].observation
    if repeated:
        screens.pop()  # the last step's screen standing in for the final one follows it below
    same, before = [], None  # before: (screenshot, pixels) of the screen before, as it will be stored
    for i, now in enumerate(screens):
        if before is not None and now.screenshot == before[0]:
            continue
        pixels = np.asarray(images[now.screenshot].convert("RGB"), dtype=np.int16)
        if before is not None and now.elements == screens[i - 1].elements and pixels.shape == before[1].shape:
            below = round(status_bar * pixels.shape[0])
            if not (np.abs(pixels[below:] - before[1][below:]) > PIXEL_NOISE).any():
                screens[i] = dataclasses.replace(now, screenshot=before[0])
                if not np.array_equal(pixels, before[1]):  # equal pixels are one screen in the store anyway
                    same.append(i)
                continue
        before = (now.screenshot, pixels)
    if screens == list(episode.recorded_observations)[:len(screens)]:
        return episode
    if repeated:
        screens.append(screens[-1])
    out = map_observations(episode, lambda obs, i: screens[i])
    return dataclasses.replace(out, provenance={**dict(episode.provenance), "same_screen_as_before": same}) \
        if same else out


def with_subgoal_labels(episodes: Sequence[Episode], labels: Mapping[str, Any]) -> list[Episode]:
    """``episodes`` with every step's ground-truth subgoal from ``labels``: for an episode's
    source name, its subgoals in order as ``[first step, last step, intent]`` or ``[first step,
    last step, intent, type]``, covering the steps without gap or overlap. Kept in
    :attr:`Step.subgoal`, which only scoring reads (segment boundaries, retrieval hits). The type
    groups subgoals of one kind across episodes (``open_app``); without one, a subgoal's type is its
    intent. A bad entry is a DataError naming the label file's key and the entry."""
    out = []
    for ep, spans, where in _labelled(episodes, labels, "subgoal_labels"):
        if spans is None:
            out.append(ep)
            continue
        if not isinstance(spans, list) or not spans:
            raise DataError(where, f"expected a non-empty list of subgoals, got {spans!r:.80}")
        of_step: list[SubgoalLabel] = []
        for k, span in enumerate(spans):
            ok = isinstance(span, list) and len(span) in (3, 4) and all(
                isinstance(v, int) and not isinstance(v, bool) for v in span[:2]) and all(
                isinstance(v, str) and v.strip() for v in span[2:])
            if not ok:
                raise DataError(f"{where}[{k}]", f"expected [first step, last step, intent(, type)], got {span!r:.80}")
            first, last, text = span[:3]
            if first != len(of_step) or not first <= last < len(ep.steps):
                raise DataError(f"{where}[{k}]", f"steps {first}-{last}: subgoals must cover steps "
                                                 f"0-{len(ep.steps) - 1} in order, this one from step {len(of_step)}")
            of_step += [SubgoalLabel(index=k, type=span[3] if len(span) == 4 else text, text=text)] * (last - first + 1)
        if len(of_step) != len(ep.steps):
            raise DataError(where, f"the subgoals cover steps 0-{len(of_step) - 1} of {len(ep.steps)}")
        steps = tuple(dataclasses.replace(s, subgoal=label) for s, label in zip(ep.steps, of_step))
        out.append(dataclasses.replace(ep, steps=steps))
    return out


def write_import(episodes: Sequence[Episode], images: ScreenshotFiles, store: str | os.PathLike,
                 source: Mapping[str, Any], ocr: bool = False, labels: Mapping[str, Any] | None = None,
                 subgoal_labels: Mapping[str, Any] | None = None, executor: Executor | None = None) -> Path:
    """Save the parsed ``episodes`` as the episode store ``store`` (see :func:`save_episodes`), the
    manifest's meta naming the ``source`` (format, path, options). Screens that only the status bar
    tells from the one before them are stored as that one (:func:`unchanged_screens`); with
    ``ocr``, screens recorded without a UI tree then get the text elements OCR reads on them; with
    ``labels``, screens get
    their types (:func:`with_labels`); with ``subgoal_labels``, steps get their subgoals
    (:func:`with_subgoal_labels`); ``executor`` is where OCR runs (:func:`with_ocr`)."""
    if not episodes:
        raise DataError("episodes", "nothing to import", str(source.get("path", "")))
    if source.get("path"):  # a store that is, lies inside or holds its source would overwrite what it reads
        refuse_overlap(source["path"], store, "store")
    episodes = [unchanged_screens(ep, images) for ep in episodes]
    if labels is not None:
        episodes = with_labels(episodes, labels)
    if subgoal_labels is not None:
        episodes = with_subgoal_labels(episodes, subgoal_labels)
    if ocr:
        reader = OcrReader()
        episodes = with_ocr(episodes, images, reader, executor)
        ocr_meta: Any = {"engine": "rapidocr-onnxruntime", "min_score": reader.min_score,
                         "status_bar": reader.status_bar}
    else:
        ocr_meta = None
    return save_episodes(episodes, images, store, meta={"imported": dict(source), "max_side": images.max_side,
                                                        "ocr": ocr_meta, "labels": labels is not None,
                                                        "subgoal_labels": subgoal_labels is not None})

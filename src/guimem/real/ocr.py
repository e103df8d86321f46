"""Text on screens recorded without a UI tree: PP-OCR through ``rapidocr-onnxruntime``, whose
detection, direction and recognition models ship inside its wheel (nothing downloads).

    reader = OcrReader()
    reader.elements(image)      # -> (UIElement(role="text", text="Settings", bounds=...), ...)

Each line of text found becomes a label-free-of-guesswork element: role ``text``, its recognised
string, its box (the axis-aligned hull of the detected quadrilateral, normalized), not known to
be clickable. Lines read with a confidence below ``min_score`` are dropped, and so is the phone's
**status bar**: any line whose centre lies in the top ``status_bar`` share of the screen (the
clock, the battery, notification icons), which changes between screenshots of the same screen
and names nothing the agent acts on. What the rest of the package reads from a UI tree — the
screen's title (:func:`guimem.smg.screens.screen_title`; here the largest text of the top fifth),
the element a tap hit, an intent's words — it then reads from these.

Results are cached on disk by the image's content (the SHA-256 of its pixels), as verified
entries (:func:`guimem.core.resume.read_entry`: a digest over the bytes, kind and key inside,
only regular files read): OCR takes seconds a screen on a CPU. An entry is used only if every
line fits the screen (a string of at most :data:`MAX_TEXT` characters, a box inside [0, 1] with
its corners in order, a score in [0, 1], at most :data:`MAX_LINES` lines); any other entry —
corrupt, planted, another screen's — is read again by the engine and written over.

Screens of extreme shape are refused, a :class:`DataError` naming the screenshot: one side more
than :data:`MAX_ASPECT` times the other. The engine cannot read them (a 1 x 40000 strip fails
inside it after its downscale to 2000 pixels, and a 5 x 300 one takes a minute, upscaled to a
736-pixel short side); every phone screen, folded or not, is within 1:3, and a long scrolling
capture within 1:8. Tiny screens (even 1 x 1) are read, and give no text.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from guimem.core.data import DataError, UIElement
from guimem.core.io import check_number
from guimem.core.resume import read_entry, write_entry

STATUS_BAR = 0.04
"""Top share of a phone screen taken by its status bar (24 dp of a ~600-900 dp tall screen)."""
TITLE_BAND = 0.2
"""Top share of the screen where a screen's title (the app bar) sits, below the status bar."""
MIN_SCORE = 0.5
"""Recognition confidence below which a line is dropped."""
DEFAULT_CACHE_DIR = Path(".cache/guimem/ocr")
MAX_ASPECT = 8.0
"""The most one side of a screen may be times the other for OCR to read it."""
MAX_LINES = 10_000  # lines a cached reading may hold (a dense screen has a few hundred)
MAX_TEXT = 2_000  # characters a cached line may hold (a line across a screen has under 200)
OCR_KIND = "guimem.ocr"


@dataclass(frozen=True)
class OcrLine:
    """One line of text read from a screen: the string, its box ``(x0, y0, x1, y1)`` in [0, 1]
    and the recogniser's confidence."""

    text: str
    bounds: tuple[float, float, float, float]
    score: float


class OcrReader:
    """PP-OCR on screenshots, as elements; ``min_score`` and ``status_bar`` as in the module doc;
    ``cache_dir`` None keeps no cache."""

    version = 2  # of what a cached result holds; part of its key (2: verified entries)

    def __init__(self, min_score: float = MIN_SCORE, status_bar: float = STATUS_BAR,
                 cache_dir: str | os.PathLike | None = DEFAULT_CACHE_DIR):
        self.min_score = float(check_number(min_score, "min_score", 0.0, 1.0))
        self.status_bar = float(check_number(status_bar, "status_bar", 0.0, 0.5))
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._engine: Any = None

    def _run(self, image: Image.Image) -> list[OcrLine]:
        """Every line the engine reads, before the score and status-bar filters."""
        if self._engine is None:
            try:
                from rapidocr_onnxruntime import RapidOCR
            except ImportError as err:  # pragma: no cover - a dependency of the package
                raise DataError("ocr", f"rapidocr-onnxruntime is not installed ({err}); "
                                       "`make setup` installs it") from None
            self._engine = RapidOCR()
        rgb = image.convert("RGB")
        w, h = rgb.size
        try:
            found, _ = self._engine(np.asarray(rgb))
        except Exception as err:  # the engine's own error classes (resize, ONNX runtime) are not ours to name
            raise DataError("screenshot", f"OCR failed on this {w}x{h} screen: {type(err).__name__} "
                                          f"{str(err)[:80]}") from None
        lines = []
        for quad, text, score in found or []:
            xs, ys = [float(p[0]) for p in quad], [float(p[1]) for p in quad]
            bounds = (max(0.0, min(xs) / w), max(0.0, min(ys) / h), min(1.0, max(xs) / w), min(1.0, max(ys) / h))
            lines.append(OcrLine(str(text), bounds, float(score)))
        return lines

    def _cache_path(self, image: Image.Image) -> tuple[Path, str] | None:
        if self.cache_dir is None:
            return None
        rgb = image.convert("RGB")
        h = hashlib.sha256(f"RGB:{rgb.width}x{rgb.height}:".encode())
        h.update(rgb.tobytes())
        key = h.hexdigest()
        return self.cache_dir / f"rapidocr@v{self.version}" / key[:2] / f"{key}.entry", key

    def lines(self, image: Image.Image, where: str | None = None) -> list[OcrLine]:
        """The lines of ``image`` (the screenshot ``where``, for errors) kept by the filters, top to
        bottom as the engine orders them."""
        where = where if where is not None else getattr(image, "filename", None) or None
        cached = self._cache_path(image)
        raw = None
        if cached is not None:
            path, key = cached
            entry = read_entry(path, OCR_KIND, key, MAX_ENTRY_BYTES)
            raw = valid_lines(entry[0].get("lines")) if entry is not None else None  # else read again
        if raw is None:
            check_shape(image.width, image.height, where)  # before the engine, which fails or takes minutes
            try:
                raw = self._run(image)
            except DataError as err:
                raise err.at(where) from None
            if cached is not None and valid_lines(_as_json(raw)) is not None:
                write_entry(cached[0], OCR_KIND, cached[1], {"engine": "rapidocr-onnxruntime", "lines": _as_json(raw)},
                            max_bytes=MAX_ENTRY_BYTES)
        return [x for x in raw if x.score >= self.min_score and x.text.strip()
                and (x.bounds[1] + x.bounds[3]) / 2 >= self.status_bar]

    def elements(self, image: Image.Image, where: str | None = None) -> tuple[UIElement, ...]:
        """The kept lines as UI elements (role ``text``, ids ``ocr0``, ``ocr1``, ...); the screen's
        most salient line — the tallest (largest type) whose centre lies in the top
        :data:`TITLE_BAND` — gets the id ``title``, which names the screen
        (:func:`guimem.smg.screens.screen_title`)."""
        lines = self.lines(image, where)
        top = [i for i, x in enumerate(lines) if (x.bounds[1] + x.bounds[3]) / 2 <= TITLE_BAND]
        title = max(top, key=lambda i: (lines[i].bounds[3] - lines[i].bounds[1], -i), default=None)
        return tuple(UIElement(id="title" if i == title else f"ocr{i}", role="text", text=x.text.strip(),
                               bounds=x.bounds) for i, x in enumerate(lines))


MAX_ENTRY_BYTES = MAX_LINES * (4 * MAX_TEXT + 200) + 4096  # the largest reading valid_lines accepts, in JSON


def check_shape(width: int, height: int, where: str | None = None) -> None:
    """Refuse (a :class:`DataError` naming the screenshot ``where``) a screen OCR cannot read: one side
    more than :data:`MAX_ASPECT` times the other."""
    if max(width, height) > MAX_ASPECT * min(width, height):
        raise DataError("screenshot", f"a {width}x{height} screen is too narrow for OCR (one side at most "
                                      f"{MAX_ASPECT:g} times the other)", where)


def _as_json(lines: list[OcrLine]) -> list[dict[str, Any]]:
    return [{"text": x.text, "bounds": list(x.bounds), "score": x.score} for x in lines]


def _unit(x: Any) -> bool:
    return type(x) in (int, float) and 0.0 <= x <= 1.0  # NaN fails both comparisons


def valid_lines(raw: Any) -> list[OcrLine] | None:
    """The lines a cached reading ``raw`` holds if every one fits a screen (see the module doc); else None."""
    if type(raw) is not list or len(raw) > MAX_LINES:
        return None
    out = []
    for d in raw:
        if type(d) is not dict or set(d) != {"text", "bounds", "score"}:
            return None
        text, bounds, score = d["text"], d["bounds"], d["score"]
        if type(text) is not str or len(text) > MAX_TEXT or not _unit(score):
            return None
        if type(bounds) is not list or len(bounds) != 4 or not all(map(_unit, bounds)) \
                or bounds[0] > bounds[2] or bounds[1] > bounds[3]:
            return None
        out.append(OcrLine(text, tuple(float(b) for b in bounds), float(score)))
    return out


def draw_lines(image: Image.Image, elements: Any, ax: Any) -> None:
    """``image`` on ``ax`` with the box and text of each OCR element (:meth:`OcrReader.elements`)."""
    from matplotlib.patches import Rectangle

    w, h = image.size
    ax.imshow(np.asarray(image.convert("RGB")))
    for e in elements:
        x0, y0, x1, y1 = e.bounds
        ax.add_patch(Rectangle((x0 * w, y0 * h), (x1 - x0) * w, (y1 - y0) * h, fill=False, lw=0.6, ec="#d62728"))
        ax.text(x0 * w, y0 * h - 1, e.text[:24], fontsize=4, color="#d62728", va="bottom")
    ax.set_axis_off()

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

Results are cached on disk by the image's content (the SHA-256 of its pixels) and the settings,
as JSON: OCR takes seconds a screen on a CPU.
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
from guimem.core.io import atomic_write_text, check_number, json_text, parse_json

STATUS_BAR = 0.04
"""Top share of a phone screen taken by its status bar (24 dp of a ~600-900 dp tall screen)."""
TITLE_BAND = 0.2
"""Top share of the screen where a screen's title (the app bar) sits, below the status bar."""
MIN_SCORE = 0.5
"""Recognition confidence below which a line is dropped."""
DEFAULT_CACHE_DIR = Path(".cache/guimem/ocr")


@dataclass(frozen=True)
class OcrLine:
    """One line of text read from a screen: the string, its box ``(x0, y0, x1, y1)`` in [0, 1]
    and the recogniser's confidence."""

    text: str
    bounds: tuple[float, float, float, float]
    score: float


def ocr_available() -> bool:
    """Whether ``rapidocr-onnxruntime`` can be imported here."""
    try:
        import rapidocr_onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class OcrReader:
    """PP-OCR on screenshots, as elements; ``min_score`` and ``status_bar`` as in the module doc;
    ``cache_dir`` None keeps no cache."""

    version = 1  # of what a cached result holds; part of its key

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
        found, _ = self._engine(np.asarray(rgb))
        w, h = rgb.size
        lines = []
        for quad, text, score in found or []:
            xs, ys = [float(p[0]) for p in quad], [float(p[1]) for p in quad]
            bounds = (max(0.0, min(xs) / w), max(0.0, min(ys) / h), min(1.0, max(xs) / w), min(1.0, max(ys) / h))
            lines.append(OcrLine(str(text), bounds, float(score)))
        return lines

    def _cache_path(self, image: Image.Image) -> Path | None:
        if self.cache_dir is None:
            return None
        rgb = image.convert("RGB")
        h = hashlib.sha256(f"RGB:{rgb.width}x{rgb.height}:".encode())
        h.update(rgb.tobytes())
        key = h.hexdigest()
        return self.cache_dir / f"rapidocr@v{self.version}" / key[:2] / f"{key}.json"

    def lines(self, image: Image.Image) -> list[OcrLine]:
        """The lines of ``image`` kept by the filters, top to bottom as the engine orders them."""
        path = self._cache_path(image)
        raw = None
        if path is not None and path.is_file():
            try:
                raw = [OcrLine(d["text"], tuple(d["bounds"]), d["score"]) for d in parse_json(path.read_text())]
            except (DataError, KeyError, TypeError, ValueError, OSError):
                raw = None  # an unreadable cache entry is recomputed
        if raw is None:
            raw = self._run(image)
            if path is not None:
                atomic_write_text(path, json_text([{"text": x.text, "bounds": list(x.bounds), "score": x.score}
                                                   for x in raw]))
        return [x for x in raw if x.score >= self.min_score and x.text.strip()
                and (x.bounds[1] + x.bounds[3]) / 2 >= self.status_bar]

    def elements(self, image: Image.Image) -> tuple[UIElement, ...]:
        """The kept lines as UI elements (role ``text``, ids ``ocr0``, ``ocr1``, ...); the screen's
        most salient line — the tallest (largest type) whose centre lies in the top
        :data:`TITLE_BAND` — gets the id ``title``, which names the screen
        (:func:`guimem.smg.screens.screen_title`)."""
        lines = self.lines(image)
        top = [i for i, x in enumerate(lines) if (x.bounds[1] + x.bounds[3]) / 2 <= TITLE_BAND]
        title = max(top, key=lambda i: (lines[i].bounds[3] - lines[i].bounds[1], -i), default=None)
        return tuple(UIElement(id="title" if i == title else f"ocr{i}", role="text", text=x.text.strip(),
                               bounds=x.bounds) for i, x in enumerate(lines))


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

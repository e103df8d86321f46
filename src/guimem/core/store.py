"""The on-disk episode store: JSON episodes and content-addressed PNG screenshots.

Layout of a store at ``root``::

    root/manifest.json          format, version, counts, and free-form metadata (world config, seed)
    root/episodes/<id>.json     one :class:`guimem.core.data.Episode` each
    root/screens/<sha16>.png    screenshots, named by the first 16 hex digits of their SHA-256

Screenshot paths inside episodes are relative to ``root`` (``screens/ab12....png``).
Writing is atomic at the store level: everything is written into a temporary folder
next to ``root`` and renamed into place, so a reader sees the old store or the new
one, never half of one. Loading validates every episode (via :mod:`guimem.core.data`) and
every screenshot it points to; each error names the file and the field.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from PIL import Image

from guimem.core.data import DataError, Episode, Observation, Subgoal

FORMAT = "guimem.episodes"
VERSION = 1
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def png_bytes(image: Image.Image) -> bytes:
    """Deterministic PNG bytes of an RGB image: no metadata, fixed filter and compression."""
    buf = io.BytesIO()
    (image if image.mode == "RGB" else image.convert("RGB")).save(buf, format="PNG", compress_level=1, optimize=False)
    return buf.getvalue()


def screen_path(data: bytes) -> str:
    """The store-relative path of a screenshot with PNG bytes ``data``."""
    return f"screens/{hashlib.sha256(data).hexdigest()[:16]}.png"


# ----------------------------------------------------------------------------- writing
def save_episodes(episodes: Sequence[Episode], images: Mapping[str, bytes | Image.Image], root: str | os.PathLike,
                  meta: Mapping[str, Any] | None = None) -> Path:
    """Write ``episodes`` as a complete store at ``root``, replacing any store there.

    Each observation's ``screenshot`` is a key of ``images`` (PNG bytes or a PIL image);
    it is rewritten to the store path of those pixels, identical screens stored once.
    """
    root = Path(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    _check_ids(episodes)
    tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{root.name}.tmp-"))
    try:
        (tmp / "episodes").mkdir()
        (tmp / "screens").mkdir()
        stored: dict[str, str] = {}  # image key -> store path
        n_steps = 0
        for ep in episodes:
            n_steps += len(ep.steps)
            ep = _relocate(ep, images, stored, tmp)
            text = json.dumps(ep.to_dict(), indent=1, ensure_ascii=False, allow_nan=False)
            (tmp / "episodes" / f"{ep.id}.json").write_text(text + "\n", encoding="utf-8")
        manifest = {"format": FORMAT, "version": VERSION, "episodes": len(episodes), "steps": n_steps,
                    "screens": len(set(stored.values())), "meta": dict(meta or {})}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True, allow_nan=False) + "\n")
        _swap_into_place(tmp, root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return root


def _check_ids(episodes: Sequence[Episode]) -> None:
    seen: dict[str, int] = {}
    for i, ep in enumerate(episodes):
        if not _SAFE_ID.match(ep.id):
            raise DataError(f"episodes[{i}].id", f"{ep.id!r} is not a safe file name ([A-Za-z0-9._-], max 128)")
        if ep.id in seen:
            raise DataError(f"episodes[{i}].id", f"duplicate id {ep.id!r} (also episodes[{seen[ep.id]}])")
        seen[ep.id] = i


def _relocate(ep: Episode, images: Mapping[str, bytes | Image.Image], stored: dict[str, str], tmp: Path) -> Episode:
    """The episode with every screenshot key replaced by its store path (writing new PNGs)."""

    def place(obs: Observation, field: str) -> Observation:
        key = obs.screenshot
        if key not in stored:
            if key not in images:
                raise DataError(field, f"no image for screenshot key {key!r} (episode {ep.id!r})")
            data = images[key]
            data = data if isinstance(data, bytes) else png_bytes(data)
            rel = screen_path(data)
            target = tmp / rel
            if not target.exists():
                target.write_bytes(data)
            stored[key] = rel
        return dataclasses.replace(obs, screenshot=stored[key])

    steps = tuple(dataclasses.replace(s, observation=place(s.observation, f"steps[{i}].screenshot"))
                  for i, s in enumerate(ep.steps))
    return dataclasses.replace(ep, steps=steps, final=place(ep.final, "final.screenshot"))


def _swap_into_place(tmp: Path, root: Path) -> None:
    """Rename the finished ``tmp`` store to ``root``; an old store is moved aside, then removed."""
    old = None
    if root.exists():
        old = root.parent / f".{root.name}.old-{uuid.uuid4().hex[:8]}"
        os.replace(root, old)
    os.replace(tmp, root)
    if old is not None:
        shutil.rmtree(old)


# ----------------------------------------------------------------------------- reading
def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError("file", "missing", str(path)) from None
    except UnicodeDecodeError as err:
        raise DataError("file", f"not UTF-8 text ({err.reason})", str(path)) from None
    try:
        return json.loads(text)  # NaN/Infinity parse, and are then refused by the field they sit in
    except json.JSONDecodeError as err:
        raise DataError("json", f"malformed JSON at line {err.lineno} column {err.colno}: {err.msg}", str(path)) from None


def read_manifest(root: str | os.PathLike) -> dict[str, Any]:
    """The validated manifest of the store at ``root``."""
    path = Path(root) / "manifest.json"
    m = _read_json(path)
    if not isinstance(m, dict):
        raise DataError("manifest", f"expected an object, got {type(m).__name__}", str(path))
    if m.get("format") != FORMAT:
        raise DataError("format", f"expected {FORMAT!r}, got {m.get('format')!r}", str(path))
    if m.get("version") != VERSION:
        raise DataError("version", f"this code reads version {VERSION}, got {m.get('version')!r}", str(path))
    for key in ("episodes", "steps", "screens"):
        if not isinstance(m.get(key), int) or isinstance(m.get(key), bool) or m[key] < 0:
            raise DataError(key, f"expected a count, got {m.get(key)!r}", str(path))
    if not isinstance(m.get("meta", {}), dict):
        raise DataError("meta", f"expected an object, got {m.get('meta')!r:.60}", str(path))
    return m


def load_episodes(root: str | os.PathLike, verify_images: bool = True) -> list[Episode]:
    """Every episode of the store at ``root``, sorted by file name, fully validated.

    Raises :class:`DataError` naming the file and the field on malformed JSON, a bad
    field, an empty episode, a duplicate id, or a screenshot that is missing, outside the
    store, or (with ``verify_images``) does not decode as an image.
    """
    root = Path(root)
    manifest = read_manifest(root)
    folder = root / "episodes"
    if not folder.is_dir():
        raise DataError("episodes", "missing folder", str(folder))
    files = sorted(folder.glob("*.json"))
    if len(files) != manifest["episodes"]:
        raise DataError("episodes", f"manifest counts {manifest['episodes']} episodes, the folder holds {len(files)}",
                        str(root / "manifest.json"))
    episodes, owner, checked = [], {}, {}
    for f in files:
        ep = Episode.from_dict(_read_json(f), path=str(f))
        if ep.id in owner:
            raise DataError("id", f"duplicate episode id {ep.id!r} (also in {owner[ep.id]})", str(f))
        owner[ep.id] = f.name
        for field, obs in _observations(ep):
            _check_screenshot(root, obs.screenshot, checked, verify_images, str(f), field)
        episodes.append(ep)
    return episodes


def _observations(ep: Episode) -> list[tuple[str, Observation]]:
    return [(f"steps[{i}].screenshot", s.observation) for i, s in enumerate(ep.steps)] + [("final.screenshot", ep.final)]


def _resolve(root: Path, rel: str, path: str | None, field: str) -> Path:
    p = Path(rel)
    if p.is_absolute() or ".." in p.parts or not rel:
        raise DataError(field, f"must be a path inside the store, got {rel!r}", path)
    return root / p


def _check_screenshot(root: Path, rel: str, checked: dict[str, str | None], verify: bool, path: str, field: str) -> None:
    """Raise if the screenshot ``rel`` is missing or (with ``verify``) undecodable; results are cached."""
    if rel not in checked:
        target = _resolve(root, rel, path, field)
        problem = None
        if not target.is_file():
            problem = f"screenshot {rel!r} does not exist"
        elif verify:
            problem = _decode_problem(target)
            problem = problem and f"screenshot {rel!r} {problem}"
        checked[rel] = problem
    if checked[rel]:
        raise DataError(field, checked[rel], path)


def _decode_problem(target: Path) -> str | None:
    """None if the file decodes as an image, else what is wrong with it."""
    try:
        with Image.open(target) as im:
            im.verify()
        with Image.open(target) as im:
            im.load()
    except Exception as err:  # PIL raises many types for broken files
        return f"does not decode: {type(err).__name__}: {err}"
    return None


def load_screenshot(root: str | os.PathLike, rel_path: str) -> Image.Image:
    """The screenshot at ``rel_path`` (relative to the store ``root``) as an RGB image."""
    target = _resolve(Path(root), rel_path, str(root), "screenshot")
    try:
        with Image.open(target) as im:
            return im.convert("RGB")
    except FileNotFoundError:
        raise DataError("screenshot", f"{rel_path!r} does not exist", str(root)) from None
    except Exception as err:
        raise DataError("screenshot", f"{rel_path!r} does not decode: {type(err).__name__}: {err}", str(root)) from None


# ============================================================================= subgoal files
def save_subgoals(path: str | Path, subgoals: Iterable[Subgoal]) -> None:
    """Write subgoals as JSON lines, atomically (a temp file in the same folder, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for sg in subgoals:
                f.write(json.dumps(sg.to_dict(), ensure_ascii=False, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_subgoals(path: str | Path) -> list[Subgoal]:
    """Read a JSON-lines file of subgoals; a bad line raises :class:`DataError` naming file, line and field."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataError("path", "no such file", str(path)) from None
    out: list[Subgoal] = []
    seen: set[str] = set()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}, line {lineno}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError("line", f"invalid JSON ({err.msg} at column {err.colno})", where) from None
        sg = Subgoal.from_dict(raw, path=where)
        if sg.id in seen:
            raise DataError("index", f"duplicate subgoal {sg.id!r}", where)
        seen.add(sg.id)
        out.append(sg)
    return out

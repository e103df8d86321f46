"""The on-disk episode store: JSON episodes and content-addressed PNG screenshots.

Layout of a store at ``root``::

    root/manifest.json          format, version, counts, and free-form metadata (world config, seed)
    root/episodes/<id>.json     one :class:`guimem.core.data.Episode` each, named by its id
    root/screens/<sha16>.png    screenshots, named by the first 16 hex digits of their SHA-256
    root/.guimem-kind           the store's kind, ``guimem.episodes`` (see :mod:`guimem.core.io`)

Screenshot paths inside episodes are relative to ``root`` (``screens/ab12....png``).

**Saving** goes through :func:`guimem.core.io.atomic_write_dirs`: a reader sees the old store or
the new one, never half of one, and a folder that is not an episode store is refused, not
replaced. What a save writes, a load reads: every episode is checked as a load would check it
before anything is written, and screenshot bytes that are not PNG are converted (or refused).

**Loading** checks everything at the door, each error naming the file and the field: every
episode (via :mod:`guimem.core.data`); its id, safe and equal to its file name; the manifest's
counts; every screenshot's path (``screens/<sha16>.png``, present, not a link out of the store)
and, in the full mode (``verify_images=True``), its bytes against the hash in its name, its pixel
count (from the PNG header, before decoding) and its decoding. Readers fall back to the backup a
crashed save left (:func:`guimem.core.io.readable_dir`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import re
import struct
import zlib
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from PIL import Image

from guimem.core.data import DataError, Episode, Observation, Subgoal, check_json
from guimem.core.io import (
    FolderWrite,
    atomic_write_dirs,
    check_number,
    finish_transactions,
    json_text,
    read_json,
    read_jsonl,
    read_whole,
    readable_dir,
    saving,
    unwritable,
    write_jsonl,
)

FORMAT = "guimem.episodes"
VERSION = 1
SPLITS = ("train", "test", "memory")
STORE_OWNED = ("manifest.json", "episodes", "screens")  # a store's own entries; anything else in its folder is kept
"""The episode stores a world writes (``data/world/<split>/``): training episodes (on the train
variants), test episodes and memory (past experience on the evaluation variants)."""
MAX_PIXELS = 40_000_000
"""Largest screenshot (width x height) accepted, checked from the image header before decoding:
far above the world's 180x360 and real phone screens (1440x3200 is 4.6 M), far below what
exhausts memory once decoded."""

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SCREEN_PATH = re.compile(r"^screens/([0-9a-f]{16})\.png$")
SCREEN_PATH = _SCREEN_PATH  # a store's screenshot path: what a memory may show (smg.memories.store_screen)
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_FOREIGN_FORMATS = ("JPEG", "WEBP", "BMP", "GIF", "TIFF")  # converted at save; never EPS & co (external tools)


def png_bytes(image: Image.Image) -> bytes:
    """Deterministic PNG bytes of an RGB image: no metadata, fixed filter and compression."""
    buf = io.BytesIO()
    (image if image.mode == "RGB" else image.convert("RGB")).save(buf, format="PNG", compress_level=1, optimize=False)
    return buf.getvalue()


def screen_path(data: bytes) -> str:
    """The store-relative path of a screenshot with PNG bytes ``data``."""
    return f"screens/{hashlib.sha256(data).hexdigest()[:16]}.png"


# ----------------------------------------------------------------------------- images
def _png_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the header of the PNG ``data``, or None if it is not a PNG."""
    if len(data) < 24 or not data.startswith(_PNG_SIGNATURE) or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def _check_pixels(width: int, height: int) -> None:
    if width * height > MAX_PIXELS:
        raise DataError("", f"has {width}x{height} pixels, over the cap of {MAX_PIXELS:,}")


_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # colour type -> samples per pixel
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))
"""Adam7's passes: (first column, first row, column step, row step)."""


def _png_data_size(width: int, height: int, depth: int, colour: int, interlaced: bool) -> int:
    """The bytes a PNG's image data inflates to: each row of each pass, its filter byte included."""
    bits = depth * _PNG_CHANNELS.get(colour, 4)
    passes = _ADAM7 if interlaced else ((0, 0, 1, 1),)
    size = 0
    for x0, y0, dx, dy in passes:
        w, h = max(0, (width - x0 + dx - 1) // dx), max(0, (height - y0 + dy - 1) // dy)
        if w and h:
            size += h * (1 + (w * bits + 7) // 8)
    return size


def _check_png_data(data: bytes) -> None:
    """Refuse (field '') a PNG whose image data inflates to fewer bytes than its header's size needs:
    a decoder fills the missing rows with black and says nothing. Inflating stops one byte past the
    size needed, so a decompression bomb costs no more than a good image."""
    width, height = struct.unpack(">II", data[16:24])
    depth, colour, interlaced = data[24], data[25], data[28] == 1
    need, got, pos = _png_data_size(width, height, depth, colour, interlaced), 0, 8
    inflate = zlib.decompressobj()
    while pos + 8 <= len(data) and got <= need:
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            try:
                got += len(inflate.decompress(data[pos + 8:pos + 8 + length], need + 1 - got))
            except zlib.error as err:
                raise DataError("", f"does not decode: its image data is corrupt ({err})") from None
        elif kind == b"IEND":
            break
        pos += 12 + length
    if got < need:
        raise DataError("", f"does not decode: its image data ends early ({got:,} of {need:,} bytes: "
                            f"{height - (got * height) // max(need, 1)} of {height} rows missing)")


def _decoded(data: bytes, formats: Sequence[str] = ("PNG",)) -> Image.Image:
    """The RGB image in ``data``; refused (field '') if over :data:`MAX_PIXELS` (checked on the header,
    before decoding), if it does not decode as one of ``formats``, or if a PNG's image data ends
    before its last row."""
    try:
        with Image.open(io.BytesIO(data), formats=formats) as im:
            _check_pixels(*im.size)
            if im.format == "PNG" and _png_size(data) is not None and len(data) >= 29:
                _check_png_data(data)
            return im.convert("RGB")
    except DataError:
        raise
    except Exception as err:  # PIL raises many types for broken files
        raise DataError("", f"does not decode: {type(err).__name__}: {err}") from None


def open_image(path: str | os.PathLike, field: str = "image") -> Image.Image:
    """The image file at ``path`` decoded to RGB (PNG, or JPEG, WebP, BMP, GIF, TIFF), its pixel count
    checked on the header before decoding; every failure is a :class:`DataError` naming the file.
    The one way guimem decodes an image file outside a store's own checks."""
    try:
        return _decoded(_read_bytes(Path(path)), ("PNG", *_FOREIGN_FORMATS))
    except DataError as err:
        raise err.at(str(path), field) from None


def _stored_png(image: Any) -> bytes:
    """The PNG bytes a screenshot is stored as (errors with field ''): PNG bytes as they are, other
    image bytes converted, PIL images encoded."""
    if isinstance(image, Image.Image):
        _check_pixels(*image.size)
        return png_bytes(image)
    if not isinstance(image, bytes):
        raise DataError("", f"expected PNG bytes or a PIL image, got {type(image).__name__}")
    size = _png_size(image)
    if size is None:
        return png_bytes(_decoded(image, _FOREIGN_FORMATS))
    _check_pixels(*size)
    try:
        with Image.open(io.BytesIO(image), formats=("PNG",)) as im:
            im.verify()  # every chunk and checksum, without decompressing the pixels
    except Exception as err:
        raise DataError("", f"does not decode: {type(err).__name__}: {err}") from None
    _check_png_data(image)  # inflated only: a PNG cut short must not be stored
    return image


def _check_content(rel: str, data: bytes, decode: bool) -> None:
    """Refuse (field '') screenshot bytes that do not match the hash in their name ``rel``, are not a
    PNG, have too many pixels (header only), or (``decode``) do not decode."""
    if screen_path(data) != rel:
        raise DataError("", f"screenshot {rel!r} does not match its content hash "
                            f"(its bytes hash to {screen_path(data)!r})")
    size = _png_size(data)
    if size is None:
        raise DataError("", f"screenshot {rel!r} is not a PNG")
    try:
        _check_pixels(*size)
        if decode:
            _decoded(data)
    except DataError as err:
        raise DataError("", f"screenshot {rel!r} {err.message}") from None


# ----------------------------------------------------------------------------- paths
def _inside(root: Path, path: Path) -> bool:
    """Whether ``path``, every link followed, stays inside the store ``root``."""
    return path.resolve().is_relative_to(root.resolve())


def _screen_file(root: Path, rel: str) -> Path:
    """The file of the screenshot ``rel``; refused (field '') unless ``rel`` is a store path
    ``screens/<sha16>.png`` that exists and does not resolve outside the store."""
    if not _SCREEN_PATH.match(rel):
        raise DataError("", f"must be a path inside the store of the form screens/<16 hex digits>.png, got {rel!r:.80}")
    target = root / rel
    if not target.is_file():
        raise DataError("", f"screenshot {rel!r} " + ("is not a regular file" if target.exists() else "does not exist"))
    if not _inside(root, target):
        raise DataError("", f"screenshot {rel!r} resolves outside the store (to {str(target.resolve())!r})")
    return target


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise DataError("", f"unreadable ({err.strerror})") from None


def _check_screenshot(root: Path, rel: str, checked: dict[str, DataError | None], full: bool,
                      path: str, field: str) -> None:
    """Refuse the screenshot ``rel`` as :func:`_screen_file` does and, if ``full``, as :func:`_check_content`
    does, with an error at ``path`` under ``field``; each path is checked once per ``checked``."""
    if rel not in checked:
        try:
            target = _screen_file(root, rel)
            if full:
                _check_content(rel, _read_bytes(target), decode=True)
            checked[rel] = None
        except DataError as err:
            checked[rel] = err
    if (err := checked[rel]) is not None:
        raise err.at(path, field)


def _checked_file(root: Path, path: Path) -> Path:
    """``path`` if it does not resolve outside the store ``root``."""
    if (path.exists() or path.is_symlink()) and not _inside(root, path):
        raise DataError("file", f"resolves outside the store (to {str(path.resolve())!r})", str(path))
    return path


# ----------------------------------------------------------------------------- writing
def save_episodes(episodes: Sequence[Episode], images: Mapping[str, bytes | Image.Image], root: str | os.PathLike,
                  meta: Mapping[str, Any] | None = None) -> Path:
    """Write ``episodes`` as a complete store at ``root``, replacing an episode store there.

    Each observation's ``screenshot`` is a key of ``images`` (PNG bytes, other image bytes PIL
    reads, which are converted to PNG, or a PIL image); it is rewritten to the store path of those
    pixels, identical screens stored once. A ``root`` that holds anything but an episode store is
    refused (:class:`DataError`), as is an episode a load would refuse; nothing is written then.
    Files a user put in the store's folder beside its own (:data:`STORE_OWNED`) are kept.
    """
    return atomic_write_dirs([episodes_write(episodes, images, root, meta)])[0]


def episodes_write(episodes: Sequence[Episode], images: Mapping[str, bytes | Image.Image], root: str | os.PathLike,
                   meta: Mapping[str, Any] | None = None) -> FolderWrite:
    """The save :func:`save_episodes` makes, not yet made: several go together into
    :func:`guimem.core.io.atomic_write_dirs` (the stores of a split, all or none). The episodes
    and ``meta`` are checked here, before any save begins."""
    _check_episodes(episodes)
    meta = check_json(dict(meta or {}), "meta")

    def write(folder: Path) -> None:
        (folder / "episodes").mkdir()
        (folder / "screens").mkdir()
        stored: dict[str, str] = {}  # image key -> store path
        for i, ep in enumerate(episodes):
            ep = _relocate(ep, images, stored, folder, f"episodes[{i}]")
            (folder / "episodes" / f"{ep.id}.json").write_bytes(json_text(ep.to_dict(), indent=1, sort_keys=False).encode())
        manifest = {"format": FORMAT, "version": VERSION, "episodes": len(episodes),
                    "steps": sum(len(ep.steps) for ep in episodes), "screens": len(set(stored.values())), "meta": meta}
        (folder / "manifest.json").write_bytes(json_text(manifest, indent=1).encode())

    return FolderWrite(Path(root), write, FORMAT, STORE_OWNED)


class StoredScreens(Mapping):
    """The screenshots ``keys`` of the store at ``root`` by store path (PNG bytes, read when asked
    for), then ``extra``'s: what :func:`save_episodes` takes to write stored episodes again."""

    def __init__(self, root: str | os.PathLike, keys: set[str], extra: Mapping[str, bytes | Image.Image] | None = None):
        self.root, self.keys_, self.extra = Path(root), set(keys), extra or {}

    def __getitem__(self, key: str) -> bytes | Image.Image:
        if key in self.keys_:
            return _read_bytes(_screen_file(self.root, key))
        return self.extra[key]

    def __iter__(self):
        return iter(sorted(self.keys_ | set(self.extra)))

    def __len__(self) -> int:
        return len(self.keys_ | set(self.extra))


def add_episodes(episodes: Sequence[Episode], images: Mapping[str, bytes | Image.Image], root: str | os.PathLike,
                 ) -> list[Episode]:
    """Add ``episodes`` (screenshots keyed into ``images``, as :func:`save_episodes` takes them) to
    the episode store at ``root``, keeping every episode it holds: the store is rewritten whole and
    atomically, with the same meta. An episode already there with the same content adds nothing;
    the same id with another app, goal, outcome, provenance, actions or screens' elements (the
    final one's included) is a DataError, and nothing is written. Returns the episodes of
    the store after the add, as stored."""
    readable_dir(root, "episode store")  # a missing store is said so before any lock is taken
    try:
        with saving(Path(root).parent):  # no other save of the store between this read and the write
            finish_transactions(Path(root).parent)  # a set a crash committed is completed before it is read
            return _add_episodes(episodes, images, Path(root))
    except OSError as err:
        raise unwritable(err, Path(root)) from err


def _add_episodes(episodes: Sequence[Episode], images: Mapping[str, bytes | Image.Image], root: Path) -> list[Episode]:
    folder = readable_dir(root, "episode store")  # or the backup a crashed save left
    old = load_episodes(folder)  # fully verified: a save rehashes, so it must never launder a swapped screen
    meta = read_manifest(folder).get("meta", {})
    by_id = {e.id: e for e in old}
    new = []
    for i, ep in enumerate(episodes):
        if ep.id in by_id:
            kept = by_id[ep.id]
            same = _content(kept) == _content(ep)  # screenshot keys may differ between stores
            if not same:
                raise DataError(f"episodes[{i}].id", f"the store already holds another episode {ep.id!r}", str(folder))
            continue
        new.append(ep)
    if not new:
        return old
    keys = {o.screenshot for e in old for o in e.recorded_observations}
    save_episodes([*old, *new], StoredScreens(folder, keys, images), root, meta=meta)
    return load_episodes(root, verify_images=False)


def _content(ep: Episode) -> tuple:
    """What makes two stored episodes of one id the same, whatever their screenshots' keys."""
    final = ep.final.elements if ep.final is not None else None
    return (ep.app, ep.goal, ep.success, dict(ep.provenance), [(s.action, s.elements, s.subgoal) for s in ep.steps],
            final)


def _check_episodes(episodes: Sequence[Episode]) -> None:
    """Refuse, before anything is written, what a load would refuse: unsafe or duplicate ids, values
    that do not read back as they are."""
    seen: dict[str, int] = {}
    for i, ep in enumerate(episodes):
        if not isinstance(ep.id, str) or not _SAFE_ID.match(ep.id):
            raise DataError(f"episodes[{i}].id", f"{ep.id!r:.80} is not a safe file name ([A-Za-z0-9._-], max 128)")
        if ep.id in seen:
            raise DataError(f"episodes[{i}].id", f"duplicate id {ep.id!r} (also episodes[{seen[ep.id]}])")
        seen[ep.id] = i
        try:
            Episode.from_dict(ep.to_dict())
        except DataError as err:
            raise err.at(None, f"episodes[{i}]") from None


def _relocate(ep: Episode, images: Mapping[str, bytes | Image.Image], stored: dict[str, str], folder: Path,
              where: str) -> Episode:
    """The episode with every screenshot key replaced by its store path (writing new PNGs)."""

    def place(obs: Observation, field: str) -> Observation:
        key = obs.screenshot
        if key not in stored:
            if key not in images:
                raise DataError(field, f"no image for screenshot key {key!r} (episode {ep.id!r})")
            try:
                data = _stored_png(images[key])
            except DataError as err:
                raise DataError(field, f"image {key!r} {err.message} (episode {ep.id!r})") from None
            rel = screen_path(data)
            if not (folder / rel).exists():
                (folder / rel).write_bytes(data)
            stored[key] = rel
        return dataclasses.replace(obs, screenshot=stored[key])

    steps = tuple(dataclasses.replace(s, observation=place(s.observation, f"{where}.steps[{i}].screenshot"))
                  for i, s in enumerate(ep.steps))
    final = place(ep.final, f"{where}.final.screenshot") if ep.final is not None else None
    return dataclasses.replace(ep, steps=steps, final=final)


# ----------------------------------------------------------------------------- reading
def read_manifest(root: str | os.PathLike) -> dict[str, Any]:
    """The validated manifest of the store at ``root`` (or of the backup a crashed save left)."""
    return read_whole(root, _read_manifest, "episode store")


def _read_manifest(root: Path) -> dict[str, Any]:
    path = _checked_file(root, root / "manifest.json")
    m = read_json(path)
    if not isinstance(m, dict):
        raise DataError("manifest", f"expected an object, got {type(m).__name__}", str(path))
    if m.get("format") != FORMAT:
        raise DataError("format", f"expected {FORMAT!r}, got {m.get('format')!r:.60}", str(path))
    if type(m.get("version")) is not int or m.get("version") != VERSION:  # true and 1.0 are not version 1
        raise DataError("version", f"this code reads version {VERSION}, got {m.get('version')!r:.60}", str(path))
    for key in ("episodes", "steps", "screens"):
        check_number(m.get(key), key, lo=0, integer=True, path=str(path))
    if not isinstance(m.get("meta", {}), dict):
        raise DataError("meta", f"expected an object, got {m.get('meta')!r:.60}", str(path))
    try:
        check_json(m.get("meta", {}), "meta")
    except DataError as err:
        raise err.at(str(path)) from None
    return m


def load_episodes(root: str | os.PathLike, verify_images: bool = True) -> list[Episode]:
    """Every episode of the store at ``root``, sorted by file name, fully validated.

    Raises :class:`DataError` naming the file and the field on malformed JSON, a bad field, an
    empty episode, an unsafe id or one that is not its file name, manifest counts that disagree
    with the store, a file that links outside the store, or a screenshot that is missing or not
    a store path; with ``verify_images`` (the full mode), also on screenshot bytes that do not
    match their content hash, exceed :data:`MAX_PIXELS` or do not decode.

    The store is read as one version while another process may be saving it
    (:func:`guimem.core.io.read_whole`).
    """
    return read_whole(root, lambda folder: _load_episodes(folder, verify_images), "episode store")


def _load_episodes(root: Path, verify_images: bool) -> list[Episode]:
    manifest = _read_manifest(root)
    mpath = str(root / "manifest.json")
    folder = root / "episodes"
    if not folder.is_dir():
        if manifest["episodes"] == 0 and not folder.exists() and not folder.is_symlink():
            return []  # a store of no episodes (a split of weight 0): DVC and git keep no empty folder
        raise DataError("episodes", "missing folder", str(folder))
    files = sorted(folder.glob("*.json"))
    if len(files) != manifest["episodes"]:
        raise DataError("episodes", f"manifest counts {manifest['episodes']} episodes, the folder holds {len(files)}",
                        mpath)
    episodes: list[Episode] = []
    checked: dict[str, DataError | None] = {}
    for f in files:
        ep = Episode.from_dict(read_json(_checked_file(root, f)), path=str(f))
        if not _SAFE_ID.match(ep.id):
            raise DataError("id", f"{ep.id!r:.80} is not a safe file name ([A-Za-z0-9._-], max 128)", str(f))
        if ep.id != f.stem:
            raise DataError("id", f"{ep.id!r} does not match its file name {f.name!r}", str(f))
        for field, obs in _observations(ep):
            _check_screenshot(root, obs.screenshot, checked, verify_images, str(f), field)
        episodes.append(ep)
    n_steps = sum(len(ep.steps) for ep in episodes)
    if n_steps != manifest["steps"]:
        raise DataError("steps", f"manifest counts {manifest['steps']} steps, the episodes hold {n_steps}", mpath)
    n_screens = sum(1 for _ in (root / "screens").glob("*.png"))
    if n_screens != manifest["screens"]:
        raise DataError("screens", f"manifest counts {manifest['screens']} screens, the folder holds {n_screens}",
                        mpath)
    return episodes


def _observations(ep: Episode) -> list[tuple[str, Observation]]:
    final = [("final.screenshot", ep.final)] if ep.final is not None else []
    return [(f"steps[{i}].screenshot", s.observation) for i, s in enumerate(ep.steps)] + final


def load_screenshot(root: str | os.PathLike, rel_path: str) -> Image.Image:
    """The screenshot at ``rel_path`` (a store path ``screens/<sha16>.png``) of the store ``root``, as
    an RGB image; its bytes are checked against their hash and its pixel count before decoding."""
    def read(folder: Path) -> bytes:
        try:
            data = _read_bytes(_screen_file(folder, rel_path))
            _check_content(rel_path, data, decode=False)
            return data
        except DataError as err:
            raise err.at(str(folder), "screenshot") from None
    data = read_whole(root, read, "episode store")
    try:
        return _decoded(data)
    except DataError as err:
        raise err.at(str(root), "screenshot") from None


# ============================================================================= subgoal files
def save_subgoals(path: str | os.PathLike, subgoals: Iterable[Subgoal]) -> Path:
    """Write subgoals as JSON lines, atomically; one that would not read back is refused, nothing written."""
    rows = []
    for i, sg in enumerate(subgoals):
        row = sg.to_dict()
        try:
            Subgoal.from_dict(row)
        except DataError as err:
            raise err.at(str(path), f"subgoals[{i}]") from None
        rows.append(row)
    return write_jsonl(path, rows)


def load_subgoals(path: str | os.PathLike, store_root: str | os.PathLike | None = None) -> list[Subgoal]:
    """Read a JSON-lines file of subgoals; a bad line raises :class:`DataError` naming file, line and field.

    The subgoals of one episode must agree with each other: distinct ids, no step in two subgoals,
    one screenshot per step position (a subgoal's ``to_screenshot`` is the next one's
    ``from_screenshot``), a ``successor`` that is a subgoal of the same episode. With ``store_root``
    (the episode store the subgoals were cut from), each must also be a span of an episode of that
    store (within its steps), its screenshots that episode's screens at its first step and after
    its last, and its goal, app and actions (where given) the episode's.
    """
    root = readable_dir(store_root, "episode store") if store_root is not None else None
    out: list[Subgoal] = []
    where_of: dict[str, str] = {}  # subgoal id -> its file and line
    checked: dict[str, DataError | None] = {}
    for lineno, raw in read_jsonl(path):
        where = f"{path}, line {lineno}"
        sg = Subgoal.from_dict(raw, path=where)
        if sg.id in where_of:
            raise DataError("id", f"duplicate subgoal {sg.id!r}", where)
        where_of[sg.id] = where
        if root is not None:
            for field in ("from_screenshot", "to_screenshot"):
                _check_screenshot(root, getattr(sg, field), checked, False, where, field)
        out.append(sg)
    if root is not None:  # after every line's own checks: a bad line is named before the store is read
        episodes = {e.id: e for e in load_episodes(root, verify_images=False)}
        for sg in out:
            _check_against_episode(sg, episodes, where_of[sg.id])
    _check_episode_subgoals(out, where_of)
    return out


def _check_against_episode(sg: Subgoal, episodes: Mapping[str, Episode], where: str) -> None:
    """Refuse a subgoal that is not a span of its episode in ``episodes`` as the segmentation cuts it."""
    ep = episodes.get(sg.episode_id)
    if ep is None:
        raise DataError("episode_id", f"the store holds no episode {sg.episode_id!r:.80}", where)
    if sg.last_step >= len(ep.steps):
        raise DataError("last_step", f"{sg.last_step} is beyond the last step ({len(ep.steps) - 1}) of episode "
                                     f"{ep.id!r}", where)
    obs = ep.observations
    for field, got, want in (("from_screenshot", sg.from_screenshot, obs[sg.first_step].screenshot),
                             ("to_screenshot", sg.to_screenshot, obs[sg.last_step + 1].screenshot)):
        if got != want:
            raise DataError(field, f"{got!r:.80} is not the screen of episode {ep.id!r} there ({want!r})", where)
    for field, got, want in (("goal", sg.goal, ep.goal), ("app", sg.app, ep.app)):
        if got and got != want:
            raise DataError(field, f"{got!r:.80} is not episode {ep.id!r}'s {field} ({want!r:.80})", where)
    if sg.actions and sg.actions != tuple(s.action for s in ep.steps[sg.first_step: sg.last_step + 1]):
        raise DataError("actions", f"are not the actions of steps {sg.first_step}..{sg.last_step} of episode "
                                   f"{ep.id!r}", where)


def _check_episode_subgoals(subgoals: Sequence[Subgoal], where_of: Mapping[str, str]) -> None:
    """Refuse the subgoals of one episode that contradict each other (see :func:`load_subgoals`)."""
    by_episode: dict[str, list[Subgoal]] = {}
    for sg in subgoals:
        by_episode.setdefault(sg.episode_id, []).append(sg)
    for eid, group in by_episode.items():
        indices = {sg.index for sg in group}
        screens: dict[int, str] = {}
        for sg in group:
            if sg.successor is not None and sg.successor not in indices:
                raise DataError("successor", f"episode {eid!r} has no subgoal {sg.successor}", where_of[sg.id])
            for field, pos, shot in (("from_screenshot", sg.first_step, sg.from_screenshot),
                                     ("to_screenshot", sg.last_step + 1, sg.to_screenshot)):
                if screens.setdefault(pos, shot) != shot:
                    raise DataError(field, f"episode {eid!r} has two screenshots at step {pos} ({screens[pos]!r} "
                                           f"and {shot!r})", where_of[sg.id])
        spans = sorted(group, key=lambda sg: (sg.first_step, sg.last_step))
        for a, b in zip(spans, spans[1:]):
            if b.first_step <= a.last_step:
                raise DataError("first_step", f"step {b.first_step} of episode {eid!r} is in two subgoals "
                                              f"({a.id} and {b.id})", where_of[b.id])

"""Saved memories read back, every file and field checked against its ``memory.json``.

A memory saves itself (``save``, :mod:`guimem.smg.memories.kinds`) as a folder of kind
``guimem.memory``. :func:`load_memory` reads one (thresholds, ``k``, style, counts, ids, paths,
finite vectors; the items against the graph's edges or the flat memory's units) and refuses one
built with other embedders; :func:`extend_memory` adds trajectories to a saved one. A memory reads
its screens from an episode store only (:func:`episode_store`, :func:`store_screen`).
:func:`load_memories` reads the memories graph_build saved, with the embedders they were built
with (:func:`memory_embedders`).
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from guimem.core.data import DataError, Episode, Subgoal
from guimem.core.executor import Executor
from guimem.core.io import (
    check_number,
    file_inside,
    folder_kind,
    read_json,
    read_jsonl,
    read_npy,
    read_whole,
    readable_dir,
    saving,
    unwritable,
)
from guimem.core.store import FORMAT as STORE_KIND
from guimem.core.store import SCREEN_PATH as STORE_SCREEN
from guimem.models.embedding import (
    DEFAULT_CACHE_DIR,
    ImageEmbedder,
    ProjectedImageEmbedder,
    TextEmbedder,
    cached_image_embedder,
    cached_text_embedder,
)
from guimem.smg.graph import EDGES as EDGES_FILE
from guimem.smg.graph_load import load_graph
from guimem.smg.index import NodeSearch
from guimem.smg.memories.items import MemoryItem
from guimem.smg.memories.kinds import (
    FLAT_VECTORS,
    ITEMS_FILE,
    KINDS,
    MEMORIES,
    MEMORY_FILE,
    MEMORY_FORMAT_VERSION,
    FlatMemory,
    GraphMemory,
    MemoryKind,
    memory_kind,
    memory_size,
)
from guimem.smg.memories.render import RenderStyle


def extend_memory(path: str | Path, episodes: Sequence[Episode], subgoals: Sequence[Subgoal],
                  image_embedder: ImageEmbedder, text_embedder: TextEmbedder) -> dict[str, dict[str, int]]:
    """Add trajectories to the memory saved at ``path`` without rebuilding it, and save it there.

    The memory is loaded, the ``episodes`` it does not hold are ingested in the order given, and
    the folder is replaced atomically: a reader sees the old memory or the new one, and a refused
    episode (a DataError) leaves the folder untouched. Each memory is defined incrementally, so with
    exact node search the result is, file for file, the memory built from its old episodes and then
    these in one go. Two things are not rebuilt: a screen projection stays the one fitted on the
    screens the memory was built from (``image_embedder`` carries it), and an HNSW index is made
    afresh from the saved node means, so its approximate answers may differ from those of the
    index the build grew.

    The episodes' screenshots must be in the episode store the memory reads
    (:func:`guimem.core.store.add_episodes` puts them there). Returns the memory's size before and
    after (:func:`memory_size`). No other save of the memory runs between its load and its save
    (:func:`guimem.core.io.saving`): two extensions at once each keep the other's episodes."""
    load_memory(path, image_embedder, text_embedder)  # a missing or bad memory is said so before any lock
    try:
        with saving(Path(path).parent):
            memory = load_memory(path, image_embedder, text_embedder)
            if memory.store_root is None:
                raise DataError("store_root", "the saved memory names no episode store to read new screenshots "
                                              "from", str(Path(path) / MEMORY_FILE))
            before = memory_size(memory)
            memory.add(episodes, subgoals, memory.store_root)
            memory.save(path)
    except OSError as err:
        raise unwritable(err, Path(path)) from err
    return {"before": before, "after": memory_size(memory)}


def load_memory(path: str | Path, image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                store_root: str | Path | None = None) -> GraphMemory | FlatMemory:
    """Read a saved memory, every file checked; refuses one built with other embedders (names the file and field)."""
    def read(folder: Path) -> GraphMemory | FlatMemory:
        for name in (MEMORY_FILE, ITEMS_FILE, FLAT_VECTORS):  # a link may not lead out of the folder
            file_inside(folder, name, "file", str(folder / name))
        mpath = str(folder / MEMORY_FILE)
        meta = read_json(folder / MEMORY_FILE)
        if not isinstance(meta, dict):
            raise DataError("memory", f"expected an object, got {type(meta).__name__}", mpath)
        check_number(meta.get("format_version"), "format_version", lo=MEMORY_FORMAT_VERSION, hi=MEMORY_FORMAT_VERSION,
                     integer=True, path=mpath)  # an integer: true and 1.0 are not version 1
        for key, want in (("image_embedder", image_embedder.name), ("image_dim", image_embedder.dim),
                          ("text_embedder", text_embedder.name), ("text_dim", text_embedder.dim)):
            if type(meta.get(key)) is not type(want) or meta.get(key) != want:  # true is not a dimension of 1
                raise DataError(key, f"memory was built with {key}={meta.get(key)!r:.60} but the caller uses {want!r}; "
                                "rebuild it with this embedder", mpath)
        try:
            kind = memory_kind(meta.get("memory"))
        except DataError as err:
            raise err.at(mpath) from None
        root = meta.get("store_root") if store_root is None else store_root
        if root is not None and not isinstance(root, (str, Path)):
            raise DataError("store_root", f"expected a path or null, got {root!r:.60}", mpath)
        store = episode_store(root, "store_root", mpath) if root is not None else None  # where its screens are read
        try:
            memory = _empty_memory(kind, meta, image_embedder, text_embedder)
        except DataError as err:
            raise err.at(mpath) from None
        if isinstance(memory, FlatMemory):
            units = _read_flat(folder, meta, memory)
        else:
            graph = load_graph(folder, expect=memory.graph.config, search=memory.search)
            for key in ("tau", "theta"):
                if getattr(graph.config, key) != getattr(memory.graph.config, key):
                    raise DataError(key, f"{MEMORY_FILE} says {getattr(memory.graph.config, key)!r}, the graph's "
                                    f"manifest says {getattr(graph.config, key)!r}", mpath)
            memory.graph = graph
            units = [e.subgoal.id for e in graph.edges]
        memory.items = read_items(folder, memory.name, units, store)
        _check_items(folder, memory)
        memory.store_root = Path(root) if root is not None else None
        return memory
    return read_whole(path, read, "saved memory")


def episode_store(root: str | Path, field: str, path: str | None = None) -> Path:
    """The folder of the episode store at ``root`` (or the backup a crashed save left); anything else
    (a folder of another kind, or none) is a :class:`DataError` under ``field`` at ``path``. A memory
    reads its screenshots from an episode store only."""
    try:
        folder = readable_dir(Path(root), "episode store")
        kind = folder_kind(folder)
        if kind != STORE_KIND:
            raise DataError("store_root", f"holds a {kind} store, not an episode store" if kind else
                                          "holds files guimem did not write")
    except DataError as err:
        raise DataError(field, f"{str(root)!r:.120} is not an episode store ({err.message})", path) from None
    return folder


def store_screen(store: Path, rel: Any, field: str, path: str | None = None) -> Path:
    """The file of ``rel``, a screen of the episode store ``store`` (``screens/<16 hex digits>.png``, a
    regular file inside it, links followed); else a :class:`DataError` under ``field`` at ``path``."""
    if not isinstance(rel, str) or not STORE_SCREEN.match(rel):
        raise DataError(field, f"expected a screen of the episode store (screens/<16 hex digits>.png), "
                               f"got {rel!r:.80}", path)
    target = file_inside(store, rel, field, path)
    if not target.is_file():
        raise DataError(field, f"{rel!r} is not a screen of the episode store {str(store)!r:.120}", path)
    return target


def read_items(folder: Path, memory: str, units: Sequence[str], store: Path | None = None) -> dict[str, MemoryItem]:
    """``items.jsonl`` of ``memory``: one item per unit, its id ``<memory>:<unit>`` (a unit of its own
    episode); every unit of ``units`` present; with ``store`` (the episode store it reads), every
    screenshot one of that store's screens (:func:`store_screen`). Unit id -> item."""
    path = folder / ITEMS_FILE
    items: dict[str, MemoryItem] = {}
    seen: set[str] = set()  # screenshots found in the store
    for lineno, d in read_jsonl(path):
        where = f"{path}, line {lineno}"
        unit = d.get("unit") if isinstance(d, dict) else None
        if not isinstance(unit, str) or unit in items:
            raise DataError("unit", f"expected a distinct unit id, got {unit!r:.60}", where)
        item = MemoryItem.from_dict(d, where)
        if item.id != f"{memory}:{unit}" or item.kind != KINDS[memory]:
            raise DataError("id", f"expected the id '{memory}:{unit}' and kind {KINDS[memory]!r}, "
                                  f"got {item.id!r:.60} of kind {item.kind!r}", where)
        if unit.rpartition("#")[0] != item.episode_id:  # a unit id is '<episode id>#<index>'
            raise DataError("episode_id", f"unit {unit!r:.60} is not of episode {item.episode_id!r:.60}", where)
        if store is not None:
            for field, rel in (("anchor", item.anchor), ("outcome", item.outcome),
                               *((f"shots[{j}]", r) for j, r in enumerate(item.shots))):
                if rel not in seen:
                    store_screen(store, rel, field, where)
                    seen.add(rel)
        items[unit] = item
    missing = [u for u in units if u not in items]
    if missing:
        raise DataError("unit", f"no item for {len(missing)} stored unit(s), e.g. {missing[0]!r:.60}", str(path))
    return items


def _check_items(folder: Path, memory: GraphMemory | FlatMemory) -> None:
    """Refuse items that contradict the units they stand for: the graph's edges (graph memories:
    one item per subgoal offered, duplicates dropped included, each edge's item its subgoal's
    steps, label, text and screens) or the flat memory's units and episodes."""
    path = str(folder / ITEMS_FILE)
    if isinstance(memory, FlatMemory):
        extra = sorted(set(memory.items) - set(memory.units))
        stray = sorted(i.episode_id for i in memory.items.values() if i.episode_id not in memory.episodes)
        if extra or stray:
            raise DataError("unit", f"an item of no stored unit ({extra[0]!r:.60})" if extra else
                            f"an item of episode {stray[0]!r:.60}, which {MEMORY_FILE} does not hold", path)
        return
    g = memory.graph
    if len(memory.items) != g.subgoals_seen:
        raise DataError("unit", f"{len(memory.items)} items, but the graph was offered {g.subgoals_seen} units", path)
    stray = sorted(i.episode_id for i in memory.items.values() if i.episode_id not in g.episodes)
    if stray:
        raise DataError("episode_id", f"an item of episode {stray[0]!r:.60}, which the graph does not hold", path)
    for e in g.edges:
        s, item = e.subgoal, memory.items[e.subgoal.id]
        for field, got, want in (("first_step", item.first_step, s.first_step), ("last_step", item.last_step, s.last_step),
                                 ("success", item.success, s.success), ("text", item.text, s.text),
                                 ("effect", item.effect, s.effect), ("anchor", item.anchor, s.from_screenshot),
                                 ("outcome", item.outcome, s.to_screenshot), ("goal", item.goal, s.goal or item.goal)):
            if got != want:
                raise DataError(field, f"item {item.id!r:.60} says {got!r:.60}, its edge {e.id} in "
                                       f"{EDGES_FILE} says {want!r:.60}", path)


def _empty_memory(kind: MemoryKind, meta: Mapping[str, Any], image_embedder: ImageEmbedder,
                  text_embedder: TextEmbedder) -> GraphMemory | FlatMemory:
    """The memory ``meta`` (a ``memory.json``) describes, before its contents are read; its constructor checks every value."""
    style = meta.get("style")
    names = {f.name for f in fields(RenderStyle)}
    if not isinstance(style, dict) or set(style) != names:
        raise DataError("style", f"expected an object with the keys {sorted(names)}, got {style!r:.80}")
    try:
        style = RenderStyle(**style)
    except DataError as err:
        raise err.at(None, "style") from None
    raw = meta.get("node_search")
    try:
        search = NodeSearch.from_dict(raw) if raw is not None else NodeSearch()
    except (DataError, TypeError) as err:
        raise DataError("node_search", str(err)) from None
    settings = {p: meta.get(p) for p in kind.params}
    return kind.make(image_embedder, text_embedder, **{**settings, "style": style, "search": search})


def _read_flat(folder: Path, meta: Mapping[str, Any], memory: FlatMemory) -> list[str]:
    """Fill ``memory`` with its units, episodes and first-screen vectors; returns the units."""
    mpath = str(folder / MEMORY_FILE)
    for key in ("units", "episodes"):
        values = meta.get(key)
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values) or len(set(values)) != len(values):
            raise DataError(key, "expected a list of distinct ids", mpath)
    units = meta["units"]
    vectors = read_npy(folder / FLAT_VECTORS, "flat_vectors", np.float32, (len(units), memory.image_embedder.dim))
    memory.index.extend(vectors)
    memory.units, memory.episodes = list(units), set(meta["episodes"])
    return units


def memory_embedders(memories_dir: str | Path, image_embedder: str = "efficientnet_lite0",
                     text_embedder: str = "minilm", cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
                     workers: int = 1, executor: Executor | None = None) -> tuple[ImageEmbedder, TextEmbedder]:
    """The cached embedders saved memories were built with (the screen projection in
    ``<memories_dir>/projection`` applied when graph_build fitted one); new screens are embedded
    by ``executor`` (default: ``workers`` local processes)."""
    images: ImageEmbedder = cached_image_embedder(image_embedder, cache_dir, workers=workers, executor=executor)
    projection = Path(memories_dir) / "projection"
    if projection.is_dir() or projection.with_name(".projection.old").is_dir():  # the backup a crashed save left
        images = ProjectedImageEmbedder.load(projection, images)
    return images, cached_text_embedder(text_embedder, cache_dir)


def load_memories(memories_dir: str | Path, image_embedder: str = "efficientnet_lite0", text_embedder: str = "minilm",
                  store_root: str | Path | None = None, cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
                  names: Sequence[str] = MEMORIES) -> dict[str, GraphMemory | FlatMemory]:
    """Every memory saved by graph_build (``<memories_dir>/<name>``), ready to retrieve and render."""
    images, texts = memory_embedders(memories_dir, image_embedder, text_embedder, cache_dir)
    memories = {}
    for name in names:
        memories[name] = load_memory(Path(memories_dir) / name, images, texts, store_root)
        if memories[name].name != name:  # a folder is named by the memory it holds
            raise DataError("memory", f"the folder {name!r} holds the {memories[name].name!r} memory",
                            str(Path(memories_dir) / name / MEMORY_FILE))
    return memories

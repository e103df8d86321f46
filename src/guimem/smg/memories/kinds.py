"""The four memories and the one registry of them: Subgoal-Graph (the SMG), Action-Graph,
Task-Graph (:class:`GraphMemory`, :class:`TaskGraphMemory`) and Subgoal-Flat (:class:`FlatMemory`).

Each kind is one entry of :data:`MEMORY_KINDS`: its class, what one of its items is and what it
stores of an episode (:mod:`guimem.smg.memories.units`). :func:`make_memory`, the loading of a saved
memory and :func:`clone` all build through it. A memory's settings are :meth:`MemoryBase.get_params`
(its constructor's arguments besides the embedders), so ``clone(m)`` is the empty memory
``m``'s kind, embedders and settings make, as a scikit-learn estimator's ``clone`` is.

Adding is all or nothing: every episode, unit, path and embedding is checked before a memory
changes; a graph memory ingests through :func:`guimem.smg.graph.add_units`, the one ingest path.
A memory saves itself as a folder of kind ``guimem.memory`` (through
:func:`guimem.core.io.atomic_write_dir`); :mod:`guimem.smg.memories.files` reads it back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np
from PIL import Image

from guimem.core.data import DataError, Episode, Subgoal
from guimem.core.io import atomic_write_dir, check_number, write_json, write_jsonl
from guimem.models.embedding import ImageEmbedder, TextEmbedder, embed_screenshots
from guimem.smg.graph import GRAPH_FILES, GraphConfig, MemoryGraph, add_units, checked_vectors
from guimem.smg.index import NodeSearch, check_k, exact_scores, rank_order
from guimem.smg.memories.items import MemoryItem, Retrieved
from guimem.smg.memories.render import RenderStyle, render_image, render_text
from guimem.smg.memories.units import make_item, pair_episodes, step_units, subgoal_units, task_units
from guimem.smg.retrieval_config import RetrievalConfig

MEMORY_FILE, ITEMS_FILE, FLAT_VECTORS = "memory.json", "items.jsonl", "flat_vectors.npy"
GRAPH_MEMORIES: tuple[str, ...] = ("smg", "action_graph", "task_graph")  # the kinds that keep a MemoryGraph
MEMORY_OWNED = tuple(sorted(GRAPH_FILES | {MEMORY_FILE, ITEMS_FILE, FLAT_VECTORS}))  # a graph or a flat memory's files
MEMORY_FORMAT_VERSION = 1
MEMORY_KIND = "guimem.memory"


class Memory(Protocol):
    """The interface every memory implements."""

    name: str
    style: RenderStyle
    image_embedder: ImageEmbedder  # embeds a query screen; :meth:`retrieve` also takes its vector

    def add(self, episodes: Sequence[Episode], subgoals: Sequence[Subgoal], store_root: str | Path) -> None:
        """Ingest past episodes (and their subgoals) whose screenshots live under ``store_root``."""
        ...

    def retrieve(self, screenshot: Image.Image | np.ndarray, goal: str, k: int | None = None) -> Retrieved:
        """Items for the current screen (or its ``image_embedder`` vector) and goal; ``k`` anchors (nodes
        or subgoals), default the memory's."""
        ...

    def render_text(self, retrieved: Retrieved) -> str:
        """The memory block for the actor's prompt."""
        ...

    def render_image(self, retrieved: Retrieved, store_root: str | Path | None = None) -> Image.Image:
        """The same items as an image (anchor screens with their actions marked)."""
        ...


# ============================================================================ shared machinery
class MemoryBase:
    """Embedders, the store, item templates, rendering and files, shared by every memory."""

    name = "base"
    PARAMS: tuple[str, ...] = ("k", "style", "search")  # the settings :meth:`get_params` returns

    def __init__(self, image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                 style: RenderStyle | None = None, k: int = RetrievalConfig.k_nodes,
                 search: NodeSearch | None = None):
        self.image_embedder, self.text_embedder = image_embedder, text_embedder
        if style is not None and not isinstance(style, RenderStyle):
            raise DataError("style", f"expected a RenderStyle, got {type(style).__name__}")
        if search is not None and not isinstance(search, NodeSearch):
            raise DataError("search", f"expected a NodeSearch, got {type(search).__name__}")
        self.style = style or RenderStyle()
        self.search = search or NodeSearch()  # how its nodes (Flat: its subgoals' first screens) are searched
        self.k = check_k(k)
        self.store_root: Path | None = None
        self.items: dict[str, MemoryItem] = {}  # unit id -> item template (score 0)
        self._text_memo: dict[str, np.ndarray] = {}

    def _embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """``[n, text_dim]`` unit vectors, memoised for this memory's lifetime."""
        todo = sorted({t for t in texts if t not in self._text_memo})
        if todo:
            self._text_memo.update(zip(todo, self.text_embedder.embed(todo)))
        if not texts:
            return np.zeros((0, self.text_embedder.dim), dtype=np.float32)
        return np.stack([self._text_memo[t] for t in texts])

    def _check_store(self, store_root: str | Path) -> Path:
        """``store_root`` as a path, refused if this memory already reads screenshots from another store."""
        root = Path(store_root)
        if self.store_root is not None and root != self.store_root:
            raise DataError("store_root", f"this memory reads screenshots from {self.store_root}, not {root}")
        return root

    def _k(self, k: int | None) -> int:
        """The anchors to retrieve: ``k`` (an integer >= 1), or this memory's own when None."""
        return self.k if k is None else check_k(k)

    def _query_vector(self, screenshot: Image.Image | np.ndarray) -> np.ndarray:
        """A query screen's embedding (an array is taken as an embedding already), checked."""
        v = screenshot if isinstance(screenshot, np.ndarray) else self.image_embedder.embed([screenshot])[0]
        return checked_vectors(v, (self.image_embedder.dim,), "screenshot")

    def render_text(self, retrieved: Retrieved) -> str:
        return render_text(retrieved, self.style)

    def render_image(self, retrieved: Retrieved, store_root: str | Path | None = None) -> Image.Image:
        root = store_root if store_root is not None else self.store_root
        if root is None and retrieved.items:
            raise DataError("store_root", "render_image needs the episode store the memory was built from")
        return render_image(retrieved, root or ".", self.style)

    def _meta(self) -> dict[str, Any]:
        return {"memory": self.name, "format_version": MEMORY_FORMAT_VERSION, "k": self.k,
                "image_embedder": self.image_embedder.name, "image_dim": self.image_embedder.dim,
                "text_embedder": self.text_embedder.name, "text_dim": self.text_embedder.dim,
                "store_root": str(self.store_root) if self.store_root is not None else None,
                "style": {**self.style.__dict__, "image_size": list(self.style.image_size)},
                "node_search": self.search.to_dict()}

    def _write_items(self, folder: Path) -> None:
        write_jsonl(folder / ITEMS_FILE, ({"unit": key, **item.to_dict()} for key, item in self.items.items()))

    def get_params(self) -> dict[str, Any]:
        """The settings that, with its embedders, build an empty memory like this one (:func:`clone`)."""
        return {name: getattr(self, name) for name in self.PARAMS}


# ============================================================================ graph memories
class GraphMemory(MemoryBase):
    """The SMG engine over subgoals (``smg``), steps (``action_graph``) or trajectories (``task_graph``)."""

    PARAMS = ("tau", "theta", "k", "rank_by", "style", "search")

    def __init__(self, name: str, image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                 tau: float = GraphConfig.tau, theta: float = GraphConfig.theta, k: int = RetrievalConfig.k_nodes,
                 rank_by: str = RetrievalConfig.rank_by,
                 style: RenderStyle | None = None, search: NodeSearch | None = None):
        if name not in GRAPH_MEMORIES:
            raise DataError("memory", f"{name!r} is not a graph memory")
        if rank_by not in ("goal", "id"):
            raise DataError("rank_by", f"expected 'goal' or 'id', got {rank_by!r:.60}")
        super().__init__(image_embedder, text_embedder, style, k, search)
        self.name, self.rank_by = name, rank_by
        self.graph = MemoryGraph(GraphConfig(image_embedder.name, image_embedder.dim,
                                             text_embedder.name, text_embedder.dim, tau, theta), self.search)

    @property
    def tau(self) -> float:
        return self.graph.config.tau

    @property
    def theta(self) -> float:
        return self.graph.config.theta

    def add(self, episodes: Sequence[Episode], subgoals: Sequence[Subgoal], store_root: str | Path) -> None:
        """Ingest episodes in order (units in step order); episodes already in the graph add nothing.
        Everything is checked first: a DataError leaves the memory as it was."""
        root = self._check_store(store_root)
        kind = MEMORY_KINDS[self.name]
        todo = []
        for episode, subs in pair_episodes(episodes, subgoals):
            units = kind.units(episode, subs)
            if units and not self.graph.holds(units):
                todo.append((episode, units))
        items = {u.id: make_item(self.name, kind.item, u, episode) for episode, units in todo for u in units
                 if u.id not in self.items}
        add_units(self.graph, [units for _, units in todo], self.image_embedder,
                  lambda per_episode: [self._embed_texts(texts) for texts in per_episode], root)
        self.items.update(items)
        self.store_root = root

    def retrieve(self, screenshot: Image.Image | np.ndarray, goal: str, k: int | None = None) -> Retrieved:
        """The top-k nodes for the screen and all their out-edges, ordered (see the module docstring)."""
        hits = self.graph.retrieve(self._query_vector(screenshot), self._k(k))
        goal_vec = self._embed_texts([goal])[0] if self.rank_by == "goal" else None
        items = []
        for hit in hits:
            edges = list(hit.edges)
            goal_scores = {}
            if goal_vec is not None and edges:
                sims = self._embed_texts([e.subgoal.goal for e in edges]).astype(np.float64) @ goal_vec
                goal_scores = {e.id: float(s) for e, s in zip(edges, sims)}
                edges = [edges[i] for i in rank_order(sims, np.array([e.id for e in edges]))]
            for e in edges:
                items.append(replace(self.items[e.subgoal.id], score=hit.score, node=hit.node,
                                     goal_score=goal_scores.get(e.id)))
        return Retrieved(self.name, tuple(items), tuple((h.node, h.score) for h in hits))

    def save(self, path: str | Path) -> Path:
        """The graph files plus ``memory.json`` and ``items.jsonl``, written atomically."""
        def write(folder: Path) -> None:
            self.graph.write_files(folder)
            self._write_items(folder)
            write_json(folder / MEMORY_FILE, {**self._meta(), "rank_by": self.rank_by,
                                              "tau": self.graph.config.tau, "theta": self.graph.config.theta})
        return atomic_write_dir(Path(path), write, kind=MEMORY_KIND, owned=MEMORY_OWNED)


class TaskGraphMemory(GraphMemory):
    """Task-Graph: whole trajectories as edges (first screen -> final screen, intent = goal).

    A query is mostly *not* a first screen, so trajectories are not found through the
    nearest node alone: every stored trajectory is scored by ``alpha`` x the cosine of the
    query screen to its first-screen node plus ``1 - alpha`` x the cosine of the query goal
    to its goal, and the ``k`` best are returned (ties: edge id).
    """

    PARAMS = ("tau", "theta", "k", "alpha", "style", "search")

    def __init__(self, image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                 tau: float = GraphConfig.tau, theta: float = GraphConfig.theta, k: int = RetrievalConfig.task_k,
                 alpha: float = RetrievalConfig.task_alpha,
                 style: RenderStyle | None = None, search: NodeSearch | None = None):
        check_number(alpha, "alpha", lo=0.0, hi=1.0)
        super().__init__("task_graph", image_embedder, text_embedder, tau, theta, k, "goal", style, search)
        self.alpha = alpha

    def retrieve(self, screenshot: Image.Image | np.ndarray, goal: str, k: int | None = None) -> Retrieved:
        """The ``k`` trajectories with the best combined first-screen and goal similarity."""
        g = self.graph
        if not g.n_edges:
            return Retrieved(self.name, ())
        k = self._k(k)
        q = self._query_vector(screenshot)
        screen = exact_scores(g.node_means, q / float(np.linalg.norm(q)))  # [nodes]
        sources = np.array([e.source for e in g.edges])  # [edges]
        goals = exact_scores(g.edge_intents, self._embed_texts([goal])[0])  # [edges]
        combined = self.alpha * screen[sources] + (1 - self.alpha) * goals
        order = rank_order(combined)[:k]
        items = tuple(replace(self.items[g.edges[i].subgoal.id], score=float(screen[sources[i]]),
                              goal_score=float(goals[i]), node=int(sources[i])) for i in order)
        nodes = tuple(dict.fromkeys((int(sources[i]), float(screen[sources[i]])) for i in order))
        return Retrieved(self.name, items, nodes)

    def _meta(self) -> dict[str, Any]:
        return {**super()._meta(), "alpha": self.alpha}


# ============================================================================ flat memory
class FlatMemory(MemoryBase):
    """Subgoal-Flat: every subgoal kept (no merging, no dedup, no graph); nearest first screens."""

    name = "flat"

    def __init__(self, image_embedder: ImageEmbedder, text_embedder: TextEmbedder, k: int = RetrievalConfig.flat_k,
                 style: RenderStyle | None = None, search: NodeSearch | None = None):
        super().__init__(image_embedder, text_embedder, style, k, search)
        self.index = self.search.make(image_embedder.dim)
        self.units: list[str] = []  # row -> unit id
        self.episodes: set[str] = set()

    def add(self, episodes: Sequence[Episode], subgoals: Sequence[Subgoal], store_root: str | Path) -> None:
        """Append every subgoal of episodes not yet in the memory, in episode then index order.
        Everything is checked first: a DataError leaves the memory as it was."""
        root = self._check_store(store_root)
        kind = MEMORY_KINDS[self.name]
        todo = [(e, kind.units(e, s)) for e, s in pair_episodes(episodes, subgoals) if e.id not in self.episodes]
        items = [(u.id, make_item(self.name, kind.item, u, episode)) for episode, units in todo for u in units]
        screens = embed_screenshots(self.image_embedder, root, [u.from_screenshot for _, units in todo for u in units])
        vectors = [checked_vectors(screens[u.from_screenshot], (self.image_embedder.dim,),
                                   f"screen_vectors[{u.from_screenshot!r}]") for _, units in todo for u in units]
        for (unit, item), v in zip(items, vectors):
            self.index.append(v)
            self.units.append(unit)
            self.items[unit] = item
        self.episodes.update(e.id for e, _ in todo)
        self.store_root = root

    def retrieve(self, screenshot: Image.Image | np.ndarray, goal: str, k: int | None = None) -> Retrieved:
        """The k subgoals whose first screen is most similar (ties: earlier ingested first)."""
        rows, scores = self.index.topk(self._query_vector(screenshot), self._k(k))
        return Retrieved(self.name, tuple(replace(self.items[self.units[r]], score=float(s))
                                          for r, s in zip(rows, scores)))

    def save(self, path: str | Path) -> Path:
        """``memory.json``, ``items.jsonl`` and ``flat_vectors.npy`` (float32 ``[subgoals, image_dim]``)."""
        def write(folder: Path) -> None:
            self._write_items(folder)
            np.save(folder / FLAT_VECTORS, self.index.vectors, allow_pickle=False)
            write_json(folder / MEMORY_FILE, {**self._meta(), "units": self.units,
                                              "episodes": sorted(self.episodes)})
        return atomic_write_dir(Path(path), write, kind=MEMORY_KIND, owned=MEMORY_OWNED)



# ============================================================================ the registry
@dataclass(frozen=True)
class MemoryKind:
    """One kind of memory: how to make an empty one, what one of its items is, what it stores of an episode."""

    make: Callable[..., GraphMemory | FlatMemory]  # (image_embedder, text_embedder, **settings)
    item: str  # "subgoal", "step" or "task" (guimem.smg.memories.items.ITEM_KINDS)
    units: Callable[[Episode, Sequence[Subgoal]], list[Subgoal]]  # an episode and its subgoals -> its units

    @property
    def params(self) -> tuple[str, ...]:
        """The settings it takes (its class's :attr:`MemoryBase.PARAMS`)."""
        return getattr(self.make, "func", self.make).PARAMS


MEMORY_KINDS: dict[str, MemoryKind] = {
    "smg": MemoryKind(partial(GraphMemory, "smg"), "subgoal", subgoal_units),
    "flat": MemoryKind(FlatMemory, "subgoal", subgoal_units),
    "action_graph": MemoryKind(partial(GraphMemory, "action_graph"), "step", step_units),
    "task_graph": MemoryKind(TaskGraphMemory, "task", task_units),
}
MEMORIES: tuple[str, ...] = tuple(MEMORY_KINDS)
KINDS = {name: kind.item for name, kind in MEMORY_KINDS.items()}  # memory -> what one of its items is
_SETTINGS = tuple(dict.fromkeys(p for kind in MEMORY_KINDS.values() for p in kind.params))


def memory_kind(name: Any) -> MemoryKind:
    """The registry's entry for ``name``; a :class:`DataError` for a name it does not hold."""
    if not isinstance(name, str) or name not in MEMORY_KINDS:
        raise DataError("memory", f"unknown memory {name!r:.60}; expected one of {MEMORIES}")
    return MEMORY_KINDS[name]


def make_memory(name: str, image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                **settings: Any) -> GraphMemory | FlatMemory:
    """An empty memory by name (:data:`MEMORIES`), with the ``settings`` its kind takes.

    Settings: ``tau``, ``theta`` (the graph memories), ``k`` (None or absent: the kind's default from
    :class:`~guimem.smg.retrieval_config.RetrievalConfig`, nodes for SMG and Action-Graph, subgoals for
    Flat, trajectories for Task-Graph), ``rank_by`` (SMG, Action-Graph), ``alpha`` (Task-Graph), ``style``
    and ``search`` (exact, HNSW or exact below a size: :class:`~guimem.smg.index.NodeSearch`; the node
    search of SMG, Action-Graph and Flat, and Task-Graph's graph build, its retrieval scoring every
    trajectory exactly). One set of settings builds every kind: those a kind does not take are left aside.
    """
    unknown = sorted(set(settings) - set(_SETTINGS))
    if unknown:
        raise TypeError(f"make_memory() got unknown settings {unknown}; a memory takes {list(_SETTINGS)}")
    kind = memory_kind(name)
    return kind.make(image_embedder, text_embedder, **{p: settings[p] for p in kind.params
                                                       if p in settings and not (p == "k" and settings[p] is None)})


def clone(memory: GraphMemory | FlatMemory) -> GraphMemory | FlatMemory:
    """An empty memory of the same kind, embedders and settings (:meth:`MemoryBase.get_params`) as ``memory``."""
    return memory_kind(memory.name).make(memory.image_embedder, memory.text_embedder, **memory.get_params())


def build_memory(name: str, episodes: Sequence[Episode], subgoals: Sequence[Subgoal], store_root: str | Path,
                 image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                 **settings: Any) -> GraphMemory | FlatMemory:
    """``make_memory(name, ...)`` filled with ``episodes`` (e.g. one fold of the training set)."""
    memory = make_memory(name, image_embedder, text_embedder, **settings)
    memory.add(episodes, subgoals, store_root)
    return memory


def rebuild_like(memory: GraphMemory | FlatMemory, episodes: Sequence[Episode], subgoals: Sequence[Subgoal],
                 store_root: str | Path) -> GraphMemory | FlatMemory:
    """:func:`clone` of ``memory`` built from ``episodes`` only (e.g. the training folds a held-out fold may read)."""
    rebuilt = clone(memory)
    rebuilt.add(episodes, subgoals, store_root)
    return rebuilt


def memory_size(memory: GraphMemory | FlatMemory) -> dict[str, int]:
    """What a memory holds: its episodes, items and (graph memories) nodes and edges."""
    if isinstance(memory, FlatMemory):
        return {"episodes": len(memory.episodes), "items": len(memory.items)}
    g = memory.graph
    return {"episodes": len(g.episodes), "items": len(memory.items), "nodes": g.n_nodes, "edges": g.n_edges}

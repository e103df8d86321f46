"""One memory interface and four memories: Subgoal-Graph (the SMG) and three baselines.

Every memory is built from past episodes and their subgoals (``add``), answers a query
screen and goal with a :class:`Retrieved` (``retrieve``), and renders what it retrieved for
the actor as a compact text block (``render_text``) or as an image of the same items
(``render_image``):

================  ==============  ===================================================
memory            unit (item)     retrieval
================  ==============  ===================================================
``smg``           subgoal         top-k merged-screen nodes, all their out-edges
``flat``          subgoal         the k subgoals whose first screen is most similar
                                  (no merging, no graph, no dedup)
``action_graph``  step            the SMG engine over single steps (observation,
                                  action, outcome screen): top-k nodes, all their
                                  out-edges
``task_graph``    whole episode   the SMG engine over whole trajectories (first screen
                                  -> final screen, intent = goal); the k trajectories
                                  with the best mix of first-screen and goal similarity
================  ==============  ===================================================

The three graph memories share :class:`guimem.smg.graph.MemoryGraph` (same ``tau``,
``theta``, same dedup rule); only the unit differs. The paper hands *all* out-edges of the
retrieved node to a large LLM; the miniature actor reads only ``max_items`` of them, so a
node's edges are ordered by the cosine between the current goal and the goal of the task the
edge came from (ties: edge id) when ``rank_by="goal"`` (the default), or by edge id alone
(``rank_by="id"``, the plain method). Flat keeps its own order (screen similarity).

Success labels come from the segmentation's judge (a step inherits its subgoal's label, a
trajectory its last subgoal's), never from the world's ground truth. Building reads
embeddings through the content-hash cache, so memories over any subset of episodes (the
actor's k-fold memories) are cheap. Everything is deterministic; rankings compare scores
rounded as :func:`guimem.smg.index.rank_order` does, so they agree across machines.

Adding is all or nothing: every episode, unit, path and embedding is checked before a memory
changes. A memory is saved as a folder of kind ``guimem.memory`` (through
:func:`guimem.core.io.atomic_write_dir`) and loading checks every file and field against its
``memory.json`` (thresholds, ``k``, style, counts, ids, paths, finite vectors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from guimem.core.data import (
    SUCCESS_LABELS,
    Action,
    DataError,
    Episode,
    Subgoal,
    UIElement,
    check_unique_ids,
    group_by_episode,
)
from guimem.core.describe import describe_actions, target_element
from guimem.core.executor import Executor
from guimem.core.io import (
    atomic_write_dir,
    check_number,
    file_inside,
    folder_kind,
    read_json,
    read_jsonl,
    read_npy,
    readable_dir,
    relative_path,
    saved_before_markers,
    write_json,
    write_jsonl,
)
from guimem.core.store import FORMAT as STORE_KIND
from guimem.core.store import SCREEN_PATH as STORE_SCREEN
from guimem.core.store import open_image, read_manifest
from guimem.models.embedding import (
    DEFAULT_CACHE_DIR,
    ImageEmbedder,
    ProjectedImageEmbedder,
    TextEmbedder,
    cached_image_embedder,
    cached_text_embedder,
    embed_screenshots,
)
from guimem.models.tokenizer import words
from guimem.smg.annotate import span_effect
from guimem.smg.graph import (
    EDGES as EDGES_FILE,
    GRAPH_FILES,
    GraphConfig,
    MemoryGraph,
    boundary_screens,
    check_subgoals,
    checked_vectors,
    episode_hash,
)
from guimem.smg.index import NodeSearch, check_k, exact_scores, rank_order
from guimem.smg.retrieval_config import RetrievalConfig
from guimem.smg.screens import screen_contexts

MEMORIES: tuple[str, ...] = ("smg", "flat", "action_graph", "task_graph")
KINDS = {"smg": "subgoal", "flat": "subgoal", "action_graph": "step", "task_graph": "task"}
MEMORY_FILE, ITEMS_FILE, FLAT_VECTORS = "memory.json", "items.jsonl", "flat_vectors.npy"
MEMORY_OWNED = tuple(sorted(GRAPH_FILES | {MEMORY_FILE, ITEMS_FILE, FLAT_VECTORS}))  # a graph or a flat memory's files
MEMORY_FORMAT_VERSION = 1
MEMORY_KIND = "guimem.memory"
MIN_PANEL = 8  # pixels: the smallest side of one item's panel in the memory image


# ============================================================================ retrieved items
@dataclass(frozen=True)
class MemoryItem:
    """One retrieved experience: a subgoal, a step or a whole trajectory of a past episode."""

    id: str  # "<memory>:<episode id>#<index>" (index: subgoal, step, or 0 for a trajectory)
    kind: str  # "subgoal", "step" or "task"
    episode_id: str
    first_step: int  # steps first..last (inclusive) of the past episode
    last_step: int
    success: str  # the judge's label: yes / no / uncertain
    goal: str  # the past task's goal
    text: str  # the sub-intent (subgoal), the action in words (step), the goal (task)
    effect: str  # what changed from the first to the last screen
    anchor: str  # screenshot (relative to the store) the first action was taken on
    outcome: str  # screenshot after the last action
    actions: tuple[Action, ...]
    phrases: tuple[str, ...]  # each action in words, on its own screen (guimem.core.describe)
    targets: tuple[UIElement | None, ...]  # each action's target element on its own screen
    shots: tuple[str, ...] = ()  # each action's own screenshot (relative to the store); () = all on the anchor
    score: float = 0.0  # screen cosine that retrieved it (its node's, for graph memories)
    goal_score: float | None = None  # cosine of its goal to the query goal (when ranked by goal)
    node: int | None = None  # the graph node it left from (graph memories)

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("id", "kind", "episode_id", "first_step", "last_step", "success",
                                           "goal", "text", "effect", "anchor", "outcome", "phrases",
                                           "score", "goal_score", "node")}
        d["phrases"] = list(self.phrases)
        d["actions"] = [a.to_dict() for a in self.actions]
        d["targets"] = [t.to_dict() if t is not None else None for t in self.targets]
        d["shots"] = list(self.shots)
        return d

    def shot(self, j: int) -> str:
        """The screenshot action ``j`` was taken on."""
        return self.shots[j] if self.shots else self.anchor

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], path: str | None = None) -> "MemoryItem":
        """An item read back, every field checked; a :class:`DataError` at ``path`` names the bad one."""
        if not isinstance(d, Mapping):
            raise DataError("item", f"expected an object, got {type(d).__name__}", path)
        for name in ("id", "kind", "episode_id", "success", "goal", "text", "effect", "anchor", "outcome"):
            if not isinstance(d.get(name), str):
                raise DataError(name, f"expected a string, got {d.get(name)!r:.60}", path)
        for name, allowed in (("kind", tuple(dict.fromkeys(KINDS.values()))), ("success", SUCCESS_LABELS)):
            if d[name] not in allowed:
                raise DataError(name, f"expected one of {allowed}, got {d[name]!r:.60}", path)
        for name in ("anchor", "outcome"):
            relative_path(d[name], name, path)
        first = check_number(d.get("first_step"), "first_step", lo=0, integer=True, path=path)
        last = check_number(d.get("last_step"), "last_step", lo=0, integer=True, path=path)
        if last < first:
            raise DataError("last_step", f"must be >= first_step ({first}), got {last}", path)
        n = last - first + 1
        for name in ("actions", "phrases", "targets"):
            if not isinstance(d.get(name), list) or len(d[name]) != n:
                raise DataError(name, f"expected a list of {n} (steps {first}..{last}), got {d.get(name)!r:.60}", path)
        if not all(isinstance(t, str) for t in d["phrases"]):
            raise DataError("phrases", "expected strings", path)
        actions, targets = [], []
        for j, (a, t) in enumerate(zip(d["actions"], d["targets"])):
            try:
                actions.append(Action.from_dict(a))
            except DataError as err:
                raise err.at(path, f"actions[{j}]") from None
            try:
                targets.append(UIElement.from_dict(t) if t is not None else None)
            except DataError as err:
                raise err.at(path, f"targets[{j}]") from None
        shots = d.get("shots", [])
        if not isinstance(shots, list) or (shots and len(shots) != n):
            raise DataError("shots", f"expected a list of {n} screenshots (steps {first}..{last}), got {shots!r:.60}", path)
        for j, rel in enumerate(shots):
            relative_path(rel, f"shots[{j}]", path)
        if shots and shots[0] != d["anchor"]:  # the first action is taken on the anchor screen
            raise DataError("shots", f"the first action's screenshot {shots[0]!r:.80} is not the anchor "
                                     f"{d['anchor']!r:.80}", path)
        goal_score, node = d.get("goal_score"), d.get("node")
        return cls(id=d["id"], kind=d["kind"], episode_id=d["episode_id"], first_step=first, last_step=last,
                   success=d["success"], goal=d["goal"], text=d["text"], effect=d["effect"], anchor=d["anchor"],
                   outcome=d["outcome"], actions=tuple(actions), phrases=tuple(d["phrases"]), targets=tuple(targets),
                   shots=tuple(shots),
                   score=float(check_number(d.get("score", 0.0), "score", path=path)),
                   goal_score=None if goal_score is None else check_number(goal_score, "goal_score", path=path),
                   node=None if node is None else check_number(node, "node", lo=0, integer=True, path=path))


@dataclass(frozen=True)
class Retrieved:
    """What a memory returned for one query, in order (best first)."""

    memory: str
    items: tuple[MemoryItem, ...]
    nodes: tuple[tuple[int, float], ...] = ()  # (node, cosine) of graph memories, best first

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(i.id for i in self.items)

    def to_dict(self) -> dict[str, Any]:
        return {"memory": self.memory, "nodes": [list(n) for n in self.nodes],
                "items": [i.to_dict() for i in self.items]}


MEMORY_CROPS = 4  # crops of touched elements in the memory image's strip (the first actions of the item)


def image_layout(size: tuple[int, int]) -> tuple[tuple[int, int, int, int], list[tuple[int, int, int, int]]]:
    """Where things are in a memory image of ``size`` (width, height): the box of the remembered
    screen (the top, in the live screen's geometry) and the boxes of the :data:`MEMORY_CROPS` crop
    slots (a strip along the bottom, ``width // MEMORY_CROPS`` square), each ``(x0, y0, x1, y1)``.
    The miniature actor cuts the image along the same boxes."""
    width, height = size
    side = width // MEMORY_CROPS
    screen = (0, 0, width, height - side)
    return screen, [(i * side, height - side, (i + 1) * side, height) for i in range(MEMORY_CROPS)]


@dataclass(frozen=True)
class RenderStyle:
    """How much of a retrieval the actor is shown: in words the first ``max_items`` items (the SMG
    block), in pixels the first item (the top-1 demonstration, in the live screen's geometry)."""

    max_items: int = 3  # items rendered as text; the rest are counted, not shown
    max_actions: int = 4  # actions shown per item
    show_goal: bool = True  # the past task's goal
    show_effect: bool = True  # the effect sentence
    image_size: tuple[int, int] = (180, 405)  # (width, height): a 180 x 360 screen over a strip of 4 crops of 45 px

    def __post_init__(self) -> None:
        check_number(self.max_items, "max_items", lo=1, integer=True)
        check_number(self.max_actions, "max_actions", lo=1, integer=True)
        for name in ("show_goal", "show_effect"):
            if not isinstance(getattr(self, name), bool):
                raise DataError(name, f"expected true or false, got {getattr(self, name)!r:.60}")
        size = self.image_size
        if not isinstance(size, (tuple, list)) or len(size) != 2:
            raise DataError("image_size", f"expected (width, height), got {size!r:.60}")
        for value in size:
            check_number(value, "image_size", lo=1, integer=True)
        screen, crops = image_layout(tuple(size))
        if min(screen[2] - screen[0], screen[3] - screen[1], crops[0][2] - crops[0][0]) < MIN_PANEL:
            raise DataError("image_size", f"{size[0]}x{size[1]} pixels leave the remembered screen or its crops "
                                          f"smaller than {MIN_PANEL} pixels")
        object.__setattr__(self, "image_size", tuple(size))


class Memory(Protocol):
    """The interface every memory implements."""

    name: str
    style: RenderStyle

    def add(self, episodes: Sequence[Episode], subgoals: Sequence[Subgoal], store_root: str | Path) -> None:
        """Ingest past episodes (and their subgoals) whose screenshots live under ``store_root``."""
        ...

    def retrieve(self, screenshot: Image.Image, goal: str, k: int | None = None) -> Retrieved:
        """Items for the current screen and goal; ``k`` anchors (nodes or subgoals), default the memory's."""
        ...

    def render_text(self, retrieved: Retrieved) -> str:
        """The memory block for the actor's prompt."""
        ...

    def render_image(self, retrieved: Retrieved, store_root: str | Path | None = None) -> Image.Image:
        """The same items as an image (anchor screens with their actions marked)."""
        ...


# ============================================================================ units
def _success_of_steps(subgoals: Sequence[Subgoal], n_steps: int) -> list[str]:
    """The judge's label of the subgoal covering each step ("uncertain" where none does)."""
    labels = ["uncertain"] * n_steps
    for s in subgoals:
        for i in range(s.first_step, min(s.last_step, n_steps - 1) + 1):
            labels[i] = s.success
    return labels


def span_effects(episode: Episode, spans: Sequence[tuple[int, int]]) -> list[str]:
    """The segmentation's effect sentence for each ``(first, last)`` span of ``episode`` (the one
    definition of an effect, :func:`guimem.smg.annotate.span_effect`)."""
    ctx = screen_contexts(episode.observations)
    return [span_effect(episode, a, b, ctx) for a, b in spans]


def step_units(episode: Episode, subgoals: Sequence[Subgoal]) -> list[Subgoal]:
    """Each step of ``episode`` as a one-action unit (the Action-Graph's edges)."""
    obs, n = episode.observations, len(episode.steps)
    labels = _success_of_steps(subgoals, n)
    phrases = describe_actions([s.action for s in episode.steps], [s.elements for s in episode.steps])
    effects = span_effects(episode, [(i, i) for i in range(n)])
    return [Subgoal(episode.id, i, i, i, obs[i].screenshot, obs[i + 1].screenshot, phrases[i], effects[i],
                    episode.steps[i].action.type, labels[i], i + 1 if i + 1 < n else None, episode.goal,
                    episode.app, (episode.steps[i].action,))
            for i in range(n)]


def task_unit(episode: Episode, subgoals: Sequence[Subgoal]) -> Subgoal:
    """The whole episode as one unit (the Task-Graph's edge): first screen -> final screen, intent = goal."""
    obs, n = episode.observations, len(episode.steps)
    last = max(subgoals, key=lambda s: s.index).success if subgoals else "uncertain"
    return Subgoal(episode.id, 0, 0, n - 1, obs[0].screenshot, obs[n].screenshot, episode.goal,
                   span_effects(episode, [(0, n - 1)])[0], f"{n} steps", last, None, episode.goal,
                   episode.app, tuple(s.action for s in episode.steps))


def make_item(memory: str, unit: Subgoal, episode: Episode) -> MemoryItem:
    """The renderable item of a unit: its actions in words and their targets, from the episode."""
    steps = episode.steps[unit.first_step: unit.last_step + 1]
    if len(steps) != unit.last_step - unit.first_step + 1:
        raise DataError("last_step", f"unit {unit.id} runs past the {len(episode.steps)} steps of its episode")
    actions = [s.action for s in steps]
    screens = [s.elements for s in steps]
    return MemoryItem(id=f"{memory}:{unit.id}", kind=KINDS[memory], episode_id=unit.episode_id,
                      first_step=unit.first_step, last_step=unit.last_step, success=unit.success,
                      goal=unit.goal or episode.goal, text=unit.text, effect=unit.effect,
                      anchor=unit.from_screenshot, outcome=unit.to_screenshot, actions=tuple(actions),
                      phrases=tuple(describe_actions(actions, screens)),
                      targets=tuple(target_element(a, els) for a, els in zip(actions, screens)),
                      shots=tuple(s.screenshot for s in steps))


def units_for(memory: str, episode: Episode, subgoals: Sequence[Subgoal]) -> list[Subgoal]:
    """The units ``memory`` stores for one episode."""
    if memory in ("smg", "flat"):
        return sorted(subgoals, key=lambda s: s.index)
    if memory == "action_graph":
        return step_units(episode, subgoals)
    if memory == "task_graph":
        return [task_unit(episode, subgoals)]
    raise DataError("memory", f"unknown memory {memory!r}; expected one of {MEMORIES}")


def _pair(episodes: Sequence[Episode], subgoals: Sequence[Subgoal]) -> list[tuple[Episode, list[Subgoal]]]:
    """Each episode (in the given order) with its subgoals; subgoals of unknown episodes, episodes
    that are not :class:`Episode` or share an id, and subgoals with unsafe paths are errors."""
    for i, e in enumerate(episodes):
        if not isinstance(e, Episode):
            raise DataError(f"episodes[{i}]", f"expected an Episode, got {type(e).__name__}")
    check_unique_ids(episodes, "episodes")
    by_episode = group_by_episode(check_subgoals(subgoals))
    ids = {e.id for e in episodes}
    stray = sorted(set(by_episode) - ids)
    if stray:
        raise DataError("episode_id", f"subgoals of {len(stray)} episode(s) not given, e.g. {stray[0]!r}")
    return [(e, by_episode.get(e.id, [])) for e in episodes]


# ============================================================================ shared machinery
class _Base:
    """Embedders, the store, item templates, rendering and files, shared by every memory."""

    name = "base"

    def __init__(self, image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                 style: RenderStyle | None = None, k: int = RetrievalConfig.k_nodes, search: NodeSearch | None = None):
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

    def _read_items(self, folder: Path, units: Sequence[str], store: Path | None = None) -> None:
        """Read ``items.jsonl``: one item per unit, its id ``<memory>:<unit>`` (a unit of its own episode);
        every unit of ``units`` present; with ``store`` (the episode store it reads), every screenshot
        one of that store's screens (:func:`store_screen`)."""
        path = folder / ITEMS_FILE
        seen: set[str] = set()  # screenshots found in the store
        for lineno, d in read_jsonl(path):
            where = f"{path}, line {lineno}"
            unit = d.get("unit") if isinstance(d, dict) else None
            if not isinstance(unit, str) or unit in self.items:
                raise DataError("unit", f"expected a distinct unit id, got {unit!r:.60}", where)
            item = MemoryItem.from_dict(d, where)
            if item.id != f"{self.name}:{unit}" or item.kind != KINDS[self.name]:
                raise DataError("id", f"expected the id '{self.name}:{unit}' and kind {KINDS[self.name]!r}, "
                                      f"got {item.id!r:.60} of kind {item.kind!r}", where)
            if unit.rpartition("#")[0] != item.episode_id:  # a unit id is '<episode id>#<index>'
                raise DataError("episode_id", f"unit {unit!r:.60} is not of episode {item.episode_id!r:.60}", where)
            if store is not None:
                for field, rel in (("anchor", item.anchor), ("outcome", item.outcome),
                                   *((f"shots[{j}]", r) for j, r in enumerate(item.shots))):
                    if rel not in seen:
                        store_screen(store, rel, field, where)
                        seen.add(rel)
            self.items[unit] = item
        missing = [u for u in units if u not in self.items]
        if missing:
            raise DataError("unit", f"no item for {len(missing)} stored unit(s), e.g. {missing[0]!r:.60}", str(path))


# ============================================================================ graph memories
class GraphMemory(_Base):
    """The SMG engine over subgoals (``smg``), steps (``action_graph``) or trajectories (``task_graph``)."""

    def __init__(self, name: str, image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                 tau: float = GraphConfig.tau, theta: float = GraphConfig.theta, k: int = RetrievalConfig.k_nodes,
                 rank_by: str = RetrievalConfig.rank_by,
                 style: RenderStyle | None = None, search: NodeSearch | None = None):
        if name not in ("smg", "action_graph", "task_graph"):
            raise DataError("memory", f"{name!r} is not a graph memory")
        if rank_by not in ("goal", "id"):
            raise DataError("rank_by", f"expected 'goal' or 'id', got {rank_by!r:.60}")
        super().__init__(image_embedder, text_embedder, style, k, search)
        self.name, self.rank_by = name, rank_by
        self.graph = MemoryGraph(GraphConfig(image_embedder.name, image_embedder.dim,
                                             text_embedder.name, text_embedder.dim, tau, theta), self.search)

    def settings(self) -> dict[str, Any]:
        """The :func:`make_memory` arguments that build an empty memory like this one."""
        return {"tau": self.graph.config.tau, "theta": self.graph.config.theta, "k": self.k,
                "rank_by": self.rank_by, "style": self.style, "search": self.search}

    def add(self, episodes: Sequence[Episode], subgoals: Sequence[Subgoal], store_root: str | Path) -> None:
        """Ingest episodes in order (units in step order); episodes already in the graph add nothing.
        Everything is checked first: a DataError leaves the memory as it was."""
        root = self._check_store(store_root)
        todo = []
        for episode, subs in _pair(episodes, subgoals):
            units = units_for(self.name, episode, subs)
            if units and self.graph.episodes.get(episode.id) != episode_hash(units):
                todo.append((episode, units))
        items = {u.id: make_item(self.name, u, episode) for episode, units in todo for u in units
                 if u.id not in self.items}
        shots = [p for _, units in todo for _, p in boundary_screens(units)]
        screens = embed_screenshots(self.image_embedder, root, shots)
        checked = [self.graph.check_episode(units, screens, self._embed_texts([u.text for u in units]))
                   for _, units in todo]
        for episode in checked:
            if episode is not None:
                self.graph.ingest(episode)
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
        return atomic_write_dir(Path(path), write, kind=MEMORY_KIND, legacy=is_legacy_memory, owned=MEMORY_OWNED)


class TaskGraphMemory(GraphMemory):
    """Task-Graph: whole trajectories as edges (first screen -> final screen, intent = goal).

    A query is mostly *not* a first screen, so trajectories are not found through the
    nearest node alone: every stored trajectory is scored by ``alpha`` x the cosine of the
    query screen to its first-screen node plus ``1 - alpha`` x the cosine of the query goal
    to its goal, and the ``k`` best are returned (ties: edge id).
    """

    def __init__(self, image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                 tau: float = GraphConfig.tau, theta: float = GraphConfig.theta, k: int = RetrievalConfig.task_k,
                 alpha: float = RetrievalConfig.task_alpha,
                 style: RenderStyle | None = None, search: NodeSearch | None = None):
        check_number(alpha, "alpha", lo=0.0, hi=1.0)
        super().__init__("task_graph", image_embedder, text_embedder, tau, theta, k, "goal", style, search)
        self.alpha = alpha

    def settings(self) -> dict[str, Any]:
        """The :func:`make_memory` arguments that build an empty memory like this one."""
        c = self.graph.config
        return {"tau": c.tau, "theta": c.theta, "k": self.k, "alpha": self.alpha, "style": self.style,
                "search": self.search}

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
class FlatMemory(_Base):
    """Subgoal-Flat: every subgoal kept (no merging, no dedup, no graph); nearest first screens."""

    name = "flat"

    def __init__(self, image_embedder: ImageEmbedder, text_embedder: TextEmbedder, k: int = RetrievalConfig.flat_k,
                 style: RenderStyle | None = None, search: NodeSearch | None = None):
        super().__init__(image_embedder, text_embedder, style, k, search)
        self.index = self.search.make(image_embedder.dim)
        self.units: list[str] = []  # row -> unit id
        self.episodes: set[str] = set()

    def settings(self) -> dict[str, Any]:
        """The :func:`make_memory` arguments that build an empty memory like this one."""
        return {"k": self.k, "style": self.style, "search": self.search}

    def add(self, episodes: Sequence[Episode], subgoals: Sequence[Subgoal], store_root: str | Path) -> None:
        """Append every subgoal of episodes not yet in the memory, in episode then index order.
        Everything is checked first: a DataError leaves the memory as it was."""
        root = self._check_store(store_root)
        todo = [(e, units_for("flat", e, s)) for e, s in _pair(episodes, subgoals) if e.id not in self.episodes]
        items = [(u.id, make_item(self.name, u, episode)) for episode, units in todo for u in units]
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
        return atomic_write_dir(Path(path), write, kind=MEMORY_KIND, legacy=is_legacy_memory, owned=MEMORY_OWNED)


# ============================================================================ factory, files
def make_memory(name: str, image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                tau: float = GraphConfig.tau, theta: float = GraphConfig.theta, k: int | None = None,
                rank_by: str = RetrievalConfig.rank_by,
                alpha: float = RetrievalConfig.task_alpha, style: RenderStyle | None = None,
                search: NodeSearch | None = None) -> GraphMemory | FlatMemory:
    """A memory by name (:data:`MEMORIES`).

    ``k``, ``rank_by`` and ``alpha`` default to :class:`~guimem.smg.retrieval_config.RetrievalConfig`'s (``k``:
    its count for the kind, nodes for SMG and Action-Graph, subgoals for Flat, trajectories for Task-Graph);
    ``rank_by`` applies to SMG and Action-Graph, ``alpha`` to Task-Graph; ``search``
    (exact, HNSW or exact below a size: :class:`~guimem.smg.index.NodeSearch`) to the node search
    of SMG, Action-Graph and Flat, and to Task-Graph's graph build (its retrieval scores every
    trajectory exactly).
    """
    if name == "flat":
        return FlatMemory(image_embedder, text_embedder, RetrievalConfig.flat_k if k is None else k, style, search)
    if name == "task_graph":
        return TaskGraphMemory(image_embedder, text_embedder, tau, theta, RetrievalConfig.task_k if k is None else k,
                               alpha, style, search)
    if name in MEMORIES:
        return GraphMemory(name, image_embedder, text_embedder, tau, theta, RetrievalConfig.k_nodes if k is None else k,
                           rank_by, style, search)
    raise DataError("memory", f"unknown memory {name!r}; expected one of {MEMORIES}")


def build_memory(name: str, episodes: Sequence[Episode], subgoals: Sequence[Subgoal], store_root: str | Path,
                 image_embedder: ImageEmbedder, text_embedder: TextEmbedder, **params: Any) -> GraphMemory | FlatMemory:
    """``make_memory(name, ...)`` filled with ``episodes`` (e.g. one fold of the training set)."""
    memory = make_memory(name, image_embedder, text_embedder, **params)
    memory.add(episodes, subgoals, store_root)
    return memory


def rebuild_like(memory: GraphMemory | FlatMemory, episodes: Sequence[Episode], subgoals: Sequence[Subgoal],
                 store_root: str | Path) -> GraphMemory | FlatMemory:
    """A memory of the same kind, settings and embedders as ``memory``, built from ``episodes`` only
    (e.g. the training folds a held-out fold may read)."""
    return build_memory(memory.name, episodes, subgoals, store_root, memory.image_embedder, memory.text_embedder,
                        **memory.settings())


def memory_size(memory: GraphMemory | FlatMemory) -> dict[str, int]:
    """What a memory holds: its episodes, items and (graph memories) nodes and edges."""
    if isinstance(memory, FlatMemory):
        return {"episodes": len(memory.episodes), "items": len(memory.items)}
    g = memory.graph
    return {"episodes": len(g.episodes), "items": len(memory.items), "nodes": g.n_nodes, "edges": g.n_edges}


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
    index the build grew. The
    episodes' screenshots must be in the episode store the memory reads
    (:func:`guimem.core.store.add_episodes` puts them there). Returns the memory's size before and
    after (:func:`memory_size`)."""
    memory = load_memory(path, image_embedder, text_embedder)
    if memory.store_root is None:
        raise DataError("store_root", "the saved memory names no episode store to read new screenshots from",
                        str(Path(path) / MEMORY_FILE))
    before = memory_size(memory)
    memory.add(episodes, subgoals, memory.store_root)
    memory.save(path)
    return {"before": before, "after": memory_size(memory)}


def load_memory(path: str | Path, image_embedder: ImageEmbedder, text_embedder: TextEmbedder,
                store_root: str | Path | None = None) -> GraphMemory | FlatMemory:
    """Read a saved memory, every file checked; refuses one built with other embedders (names the file and field)."""
    folder = readable_dir(Path(path), "saved memory")
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
    name = meta.get("memory")
    if name not in MEMORIES:
        raise DataError("memory", f"unknown memory {name!r:.60}; expected one of {MEMORIES}", mpath)
    root = meta.get("store_root") if store_root is None else store_root
    if root is not None and not isinstance(root, (str, Path)):
        raise DataError("store_root", f"expected a path or null, got {root!r:.60}", mpath)
    store = episode_store(root, "store_root", mpath) if root is not None else None  # where its screens are read
    try:
        memory = _empty_memory(name, meta, image_embedder, text_embedder)
    except DataError as err:
        raise err.at(mpath) from None
    if isinstance(memory, FlatMemory):
        units = _read_flat(folder, meta, memory)
    else:
        graph = MemoryGraph.load(folder, expect=memory.graph.config, search=memory.search)
        for key in ("tau", "theta"):
            if getattr(graph.config, key) != getattr(memory.graph.config, key):
                raise DataError(key, f"{MEMORY_FILE} says {getattr(memory.graph.config, key)!r}, the graph's "
                                f"manifest says {getattr(graph.config, key)!r}", mpath)
        memory.graph = graph
        units = [e.subgoal.id for e in graph.edges]
    memory._read_items(folder, units, store)
    _check_items(folder, memory)
    memory.store_root = Path(root) if root is not None else None
    return memory


def episode_store(root: str | Path, field: str, path: str | None = None) -> Path:
    """The folder of the episode store at ``root`` (or the backup a crashed save left); anything else
    (a folder of another kind, or none) is a :class:`DataError` under ``field`` at ``path``. A memory
    reads its screenshots from an episode store only."""
    try:
        folder = readable_dir(Path(root), "episode store")
        kind = folder_kind(folder)
        if kind is None:
            read_manifest(folder)  # a store saved before kind markers: its manifest names the format
        elif kind != STORE_KIND:
            raise DataError("store_root", f"holds a {kind} store, not an episode store")
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


def _empty_memory(name: str, meta: Mapping[str, Any], image_embedder: ImageEmbedder,
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
        search = NodeSearch.from_dict(raw) if raw is not None else NodeSearch()  # older memories: the default
    except (DataError, TypeError) as err:
        raise DataError("node_search", str(err)) from None
    if name == "flat":
        return FlatMemory(image_embedder, text_embedder, meta.get("k"), style, search)
    if name == "task_graph":
        return TaskGraphMemory(image_embedder, text_embedder, meta.get("tau"), meta.get("theta"), meta.get("k"),
                               meta.get("alpha"), style, search)
    return GraphMemory(name, image_embedder, text_embedder, meta.get("tau"), meta.get("theta"), meta.get("k"),
                       meta.get("rank_by"), style, search)


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


def is_legacy_memory(folder: Path) -> bool:
    """Whether ``folder`` holds exactly a memory saved before kind markers (its ``memory.json`` names one)."""
    def files(meta: Any) -> set[str] | None:
        if not isinstance(meta, dict) or meta.get("memory") not in MEMORIES:
            return None
        return ({FLAT_VECTORS} if meta["memory"] == "flat" else GRAPH_FILES) | {MEMORY_FILE, ITEMS_FILE}
    return saved_before_markers(folder, MEMORY_FILE, files)


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


# ============================================================================ text
OUTCOME_WORDS = {"yes": "succeeded", "no": "failed", "uncertain": "unsure"}


def item_text(n: int, item: MemoryItem, style: RenderStyle) -> str:
    """One line of the memory block, e.g. ``1. failed | task: ... | subgoal: ... | did: ... | result: ...``."""
    parts = [f"{n}. {OUTCOME_WORDS.get(item.success, item.success)}"]
    if style.show_goal:
        parts.append(f"task: {item.goal}")
    if item.kind == "subgoal":
        parts.append(f"subgoal: {item.text}")
    shown = list(item.phrases[: style.max_actions])
    more = len(item.phrases) - len(shown)
    parts.append("did: " + "; ".join(shown) + (f" (+{more} more)" if more > 0 else ""))
    if style.show_effect and item.effect:
        parts.append(f"result: {item.effect.rstrip('.')}")
    return " | ".join(parts)


def render_text(retrieved: Retrieved, style: RenderStyle = RenderStyle()) -> str:
    """The memory block: a header line, then one line per shown item (best first)."""
    items = retrieved.items[: style.max_items]
    if not items:
        return "Past experience: none."
    total = len(retrieved.items)
    head = f"Past experience ({len(items)} of {total}):" if total > len(items) else "Past experience:"
    return "\n".join([head] + [item_text(i + 1, it, style) for i, it in enumerate(items)])


def count_tokens(text: str) -> int:
    """How many tokens the actor's tokenizer makes of ``text``."""
    return len(words(text))


# ============================================================================ image
OUTCOME_COLOURS = {"yes": (0, 158, 115), "no": (213, 94, 0), "uncertain": (240, 228, 66)}  # Okabe-Ito
MARK = (255, 0, 200)  # action marks: a magenta no theme uses
MARK_EDGE = (255, 255, 255)
EMPTY = (128, 128, 128)


def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=max(6, size))


def _badge(d: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, size: int, width: float) -> None:
    """A small filled label (typed text, back, open app ...) clipped to ``width`` pixels."""
    f = _font(size)
    while text and f.getlength(text) > width - 4:
        text = text[:-1]
    x, y = xy
    w = f.getlength(text) + 4
    d.rectangle((x, y, x + w, y + size + 4), fill=MARK, outline=MARK_EDGE)
    d.text((x + 2, y + 1), text, font=f, fill=(255, 255, 255))


def _arrow(d: ImageDraw.ImageDraw, a: tuple[float, float], b: tuple[float, float], width: int, head: float) -> None:
    d.line([a, b], fill=MARK_EDGE, width=width + 2)
    d.line([a, b], fill=MARK, width=width)
    ang = math.atan2(b[1] - a[1], b[0] - a[0])
    for s in (-1, 1):
        tip = (b[0] - head * math.cos(ang + s * 0.5), b[1] - head * math.sin(ang + s * 0.5))
        d.line([b, tip], fill=MARK, width=width)


def draw_actions(panel: Image.Image, item: MemoryItem, style: RenderStyle) -> None:
    """Mark an item's actions where they were made: those taken on its anchor screen (the actions
    after it that left the screen are shown by their crops): rings at taps, arrows for swipes,
    typed text noted. Marks are numbered when the item has several actions; the first is drawn thickest.
    """
    d = ImageDraw.Draw(panel)
    w, h = panel.size
    r, fs = max(3.0, 0.09 * w), max(7, int(0.075 * w))
    badge_y = h - 2 * (fs + 6)
    for j, action in enumerate(item.actions[: style.max_actions]):
        if item.shot(j) != item.anchor:
            continue
        width = max(1, round(w / (40 if j == 0 else 80)))
        label = str(j + 1) if len(item.actions) > 1 else ""
        if action.type in ("tap", "long_press"):
            x, y = action.point[0] * w, action.point[1] * h
            for rr in ([r, 0.6 * r] if action.type == "long_press" else [r]):
                d.ellipse((x - rr, y - rr, x + rr, y + rr), outline=MARK_EDGE, width=width + 2)
                d.ellipse((x - rr, y - rr, x + rr, y + rr), outline=MARK, width=width)
            if label:
                d.text((x + r, y - r - fs), label, font=_font(fs), fill=MARK, stroke_width=1, stroke_fill=MARK_EDGE)
        elif action.type == "swipe":
            a = (action.point[0] * w, action.point[1] * h)
            end = action.end_point()
            b = (end[0] * w, end[1] * h)
            _arrow(d, a, b, width + 1, r)
            if label:
                d.text((a[0] + 2, a[1]), label, font=_font(fs), fill=MARK, stroke_width=1, stroke_fill=MARK_EDGE)
        elif action.type == "type":
            target = item.targets[j] if j < len(item.targets) else None
            prev = item.targets[j - 1] if j > 0 and j - 1 < len(item.targets) else None
            box = target or prev  # the field typed into: this action's target, else the one tapped before
            y = box.bounds[3] * h + 2 if box is not None else 0.15 * h
            _badge(d, (2, min(y, h - fs - 6)), f"{label + ': ' if label else ''}type \"{action.text}\"", fs, w - 4)
        else:
            text = {"open_app": f"open {action.text}", "long_press": "long press"}.get(action.type, action.type)
            _badge(d, (2, badge_y), f"{label + ': ' if label else ''}{text}", fs, w - 4)
            badge_y -= fs + 6


@lru_cache(maxsize=1024)
def _anchor(store_root: str, rel: str, size: tuple[int, int]) -> Image.Image:
    """The screenshot ``rel`` of the store, decoded and resized once (anchors recur across retrievals;
    store screenshots are content-addressed, so a path's pixels never change); callers copy it."""
    return open_image(file_inside(store_root, rel, "anchor")).resize(size, Image.BILINEAR)


def render_panel(item: MemoryItem, store_root: str | Path, size: tuple[int, int], style: RenderStyle) -> Image.Image:
    """One item: its anchor screen, actions marked, inside a border coloured by its outcome."""
    w, h = size
    border = max(2, round(w / 60))
    panel = Image.new("RGB", size, OUTCOME_COLOURS.get(item.success, EMPTY))
    inner = (w - 2 * border, h - 2 * border)
    shot = _anchor(str(store_root), item.anchor, inner).copy()
    draw_actions(shot, item, style)
    panel.paste(shot, (border, border))
    return panel


@lru_cache(maxsize=4096)
def _crop(store_root: str, rel: str, bounds: tuple[float, float, float, float], side: int) -> Image.Image:
    """The element at ``bounds`` on screenshot ``rel``, cut out at full resolution and scaled to ``side``."""
    shot = open_image(file_inside(store_root, rel, "anchor"))
    w, h = shot.size
    x0, y0, x1, y1 = bounds
    box = (int(x0 * w), int(y0 * h), max(int(x0 * w) + 1, math.ceil(x1 * w)), max(int(y0 * h) + 1, math.ceil(y1 * h)))
    return shot.crop(box).resize((side, side), Image.BILINEAR)


def render_image(retrieved: Retrieved, store_root: str | Path, style: RenderStyle = RenderStyle()) -> Image.Image:
    """The top-1 item as a picture: its first screen in the live screen's geometry (the whole width,
    so a remembered control sits where it sits on a screen of this variant), each action marked where
    it was made, inside a border coloured by the item's outcome; below it a strip of crops of the
    elements its first actions touched, at full resolution, so a label-free glyph stays recognisable
    (:func:`image_layout`). An empty retrieval is a grey image."""
    canvas = Image.new("RGB", style.image_size, EMPTY)
    if not retrieved.items:
        return canvas
    item = retrieved.items[0]
    screen, crops = image_layout(style.image_size)
    canvas.paste(render_panel(item, store_root, (screen[2] - screen[0], screen[3] - screen[1]), style), screen[:2])
    touched = [(item.shot(j), t) for j, t in enumerate(item.targets[: style.max_actions]) if t is not None]
    for (x0, y0, x1, y1), (shot, target) in zip(crops, touched[:MEMORY_CROPS]):
        side = x1 - x0 - 2
        canvas.paste(_crop(str(store_root), shot, target.bounds, side), (x0 + 1, y0 + 1))
    return canvas

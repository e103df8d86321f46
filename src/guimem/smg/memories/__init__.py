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

Building reads embeddings through the content-hash cache, so memories over any subset of
episodes (the actor's k-fold memories) are cheap. Everything is deterministic; rankings compare
scores rounded as :func:`guimem.smg.index.rank_order` does, so they agree across machines.

One idea per module:

* :mod:`~guimem.smg.memories.items`: what a retrieval returns (:class:`MemoryItem`, :class:`Retrieved`);
* :mod:`~guimem.smg.memories.units`: what a memory stores of an episode, and each unit's item;
* :mod:`~guimem.smg.memories.kinds`: the four memories, the registry of them (:data:`MEMORY_KINDS`),
  :func:`make_memory`, ``get_params`` and :func:`clone`;
* :mod:`~guimem.smg.memories.files`: saved memories read back and extended;
* :mod:`~guimem.smg.memories.render`: how a memory is shown to the actor (text, image, the image's layout).
"""

from guimem.smg.memories.files import (
    episode_store,
    extend_memory,
    load_memories,
    load_memory,
    memory_embedders,
    read_items,
    store_screen,
)
from guimem.smg.memories.items import ITEM_KINDS, MemoryItem, Retrieved
from guimem.smg.memories.kinds import (
    FLAT_VECTORS,
    ITEMS_FILE,
    KINDS,
    MEMORIES,
    MEMORY_FILE,
    MEMORY_FORMAT_VERSION,
    GRAPH_MEMORIES,
    MEMORY_KIND,
    MEMORY_KINDS,
    MEMORY_OWNED,
    FlatMemory,
    GraphMemory,
    Memory,
    MemoryBase,
    MemoryKind,
    TaskGraphMemory,
    build_memory,
    clone,
    make_memory,
    memory_kind,
    memory_size,
    rebuild_like,
)
from guimem.smg.memories.render import (
    EMPTY,
    MARK,
    MARK_EDGE,
    MEMORY_CROPS,
    MIN_PANEL,
    OUTCOME_COLOURS,
    OUTCOME_WORDS,
    RenderStyle,
    count_tokens,
    crop_slots,
    draw_actions,
    image_layout,
    item_text,
    render_image,
    render_panel,
    render_text,
)
from guimem.smg.memories.units import (
    make_item,
    pair_episodes,
    span_effects,
    step_units,
    subgoal_units,
    task_unit,
    task_units,
)

__all__ = [
    "EMPTY", "FLAT_VECTORS", "GRAPH_MEMORIES", "ITEMS_FILE", "ITEM_KINDS", "KINDS", "MARK", "MARK_EDGE", "MEMORIES", "MEMORY_CROPS",
    "MEMORY_FILE", "MEMORY_FORMAT_VERSION", "MEMORY_KIND", "MEMORY_KINDS", "MEMORY_OWNED", "MIN_PANEL",
    "OUTCOME_COLOURS", "OUTCOME_WORDS", "FlatMemory", "GraphMemory", "Memory", "MemoryBase", "MemoryItem",
    "MemoryKind", "RenderStyle", "Retrieved", "TaskGraphMemory", "build_memory", "clone", "count_tokens",
    "crop_slots", "draw_actions", "episode_store", "extend_memory", "image_layout", "item_text", "load_memories", "load_memory",
    "make_item", "make_memory", "memory_embedders", "memory_kind", "memory_size", "pair_episodes", "read_items",
    "rebuild_like", "render_image", "render_panel", "render_text", "span_effects", "step_units", "store_screen",
    "subgoal_units", "task_unit", "task_units"
]

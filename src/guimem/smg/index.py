"""Node search for the memories: the nearest stored unit vectors to a query, exact or approximate.

:class:`NodeIndex` is exact and vectorised: a float32 scan picks candidates, which are then scored
in float64 on the stored vectors, so the answer never depends on how the scan was blocked. Its cost
grows with the rows it holds, so a graph that merges every new screen into its nearest node costs
(screens x nodes) to build: quadratic once the nodes grow with the screens.

:class:`HnswNodeIndex` answers from a hierarchical navigable small-world graph (hnswlib, inner
product) once it holds ``exact_below`` rows, and exactly below that: it asks HNSW for
``candidates`` neighbours and rescores them exactly in float64 as :class:`NodeIndex` does, so the
ranking rule (rounded scores, ties to the lower id) is the same and only a neighbour HNSW misses
can change an answer. Rows are updated in place (a node's mean moves as screens merge into it);
relinking an element in HNSW costs as much as inserting it, so HNSW keeps the vector it indexed
until the row has moved from it by more than a cosine of ``drift`` (the exact rescoring always
reads the row as it is now). Inserts run on one thread with a fixed seed, so a build is
reproducible.

:class:`NodeSearch` names the choice (``params.yaml``: ``graph_build.node_index``): ``exact``,
``hnsw``, or ``auto`` (the default: exact below ``exact_below`` rows, HNSW from there).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import hnswlib
import numpy as np

from guimem.core.data import DataError
from guimem.core.io import check_number

COSINE_ATOL = 1e-6
"""Tolerance of every threshold decision: a cosine counts as >= ``tau`` (``theta``) when it is >=
``tau - COSINE_ATOL``."""
RANK_DECIMALS = 6
"""Rankings compare scores rounded to this many decimals (ties: lower id)."""


# ============================================================================ exact search
def exact_scores(rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise dot products in float64, each a function of its row and ``q`` only."""
    return np.einsum("ij,j->i", rows.astype(np.float64), q.astype(np.float64), optimize=False)  # [n]


def reaches(cosines: np.ndarray | float, threshold: float) -> np.ndarray | bool:
    """Whether each cosine is >= ``threshold``, within :data:`COSINE_ATOL`."""
    return np.asarray(cosines) >= threshold - COSINE_ATOL


def rank_order(scores: np.ndarray, ids: np.ndarray | None = None) -> np.ndarray:
    """Positions of ``scores`` best first: by score rounded to :data:`RANK_DECIMALS` decimals, ties by
    ``ids`` (default: position), so scores that differ in their last bits tie wherever they were computed."""
    ids = np.arange(len(scores)) if ids is None else ids
    return np.lexsort((ids, -np.round(np.asarray(scores, dtype=np.float64), RANK_DECIMALS)))


def _top(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best ``(id, score)`` pairs (see :func:`rank_order`)."""
    order = rank_order(scores, ids)[:k]
    return ids[order], scores[order]


def check_k(k: Any, field: str = "k") -> int:
    """``k`` if it is an integer >= 1 (how many nodes, items or anchors to retrieve); else a DataError."""
    return int(check_number(k, field, lo=1, integer=True))


class NodeIndex:
    """Exact top-k cosine search over unit vectors that are appended and updated in place.

    The answer is defined as the ``k`` rows with the highest float64 dot product with the
    query, compared as :func:`rank_order` does (rounded, ties: lower row id). One float32
    matrix-vector product over all rows (the vectorised scan) keeps every row within
    ``2 * dim * 2**-24`` of the k-th best (twice the worst-case float32 rounding error of a dot
    product of unit vectors), widened by the rounding of the ranking; only those few are
    rescored in float64, row by row, so the answer never depends on BLAS blocking.
    """

    def __init__(self, dim: int):
        self.dim = dim
        self._x = np.zeros((64, dim), dtype=np.float32)  # [capacity, dim] unit rows
        self.n = 0
        self.margin = 2.0 * dim * 2.0 ** -24 + 10.0 ** -RANK_DECIMALS

    @property
    def vectors(self) -> np.ndarray:
        """``[n, dim]`` float32 view of the stored unit vectors."""
        return self._x[: self.n]

    def _reserve(self, n: int) -> None:
        if n > len(self._x):
            grown = np.zeros((max(n, 2 * len(self._x)), self.dim), dtype=np.float32)
            grown[: self.n] = self._x[: self.n]
            self._x = grown

    def append(self, v: np.ndarray) -> int:
        """Store a unit vector; returns its row id."""
        self._reserve(self.n + 1)
        self._x[self.n] = v
        self.n += 1
        return self.n - 1

    def update(self, i: int, v: np.ndarray) -> None:
        """Replace row ``i`` (a node's mean moved)."""
        self._x[i] = v

    def extend(self, vectors: np.ndarray) -> None:
        """Append many rows at once (loading a saved graph)."""
        self._reserve(self.n + len(vectors))
        self._x[self.n: self.n + len(vectors)] = vectors
        self.n += len(vectors)

    def topk(self, q: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Row ids ``[k']`` and float64 cosines ``[k']`` of the ``k' = min(k, n)`` best rows."""
        k = check_k(k)
        n = self.n
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        k = min(k, n)
        q = np.asarray(q, dtype=np.float32)
        s = self._x[:n] @ q  # [n] float32
        kth = s.max() if k == 1 else np.partition(s, n - k)[n - k]
        candidates = np.flatnonzero(s >= kth - self.margin)
        return _top(candidates, exact_scores(self._x[candidates], q), k)


# ============================================================================ approximate search
NODE_INDEXES = ("auto", "exact", "hnsw")
"""The node searches :class:`NodeSearch` knows."""


@dataclass(frozen=True)
class NodeSearch:
    """How a memory searches its nodes: exact, HNSW, or exact below ``exact_below`` rows and HNSW from there."""

    kind: str = "auto"  # one of NODE_INDEXES
    exact_below: int = 20_000  # auto: rows searched exactly before HNSW takes over
    m: int = 16  # HNSW: links per element (hnswlib's M)
    ef_construction: int = 100  # HNSW: candidate list while inserting
    ef_search: int = 200  # HNSW: candidate list while querying (at least ``candidates``; benchmarks/bench_index.py)
    candidates: int = 16  # HNSW neighbours rescored exactly per query
    drift: float = 0.01  # HNSW re-indexes a row once its cosine to the vector it indexed falls below 1 - drift
    seed: int = 0  # HNSW's level draws

    def __post_init__(self) -> None:
        if self.kind not in NODE_INDEXES:
            raise DataError("node_index", f"expected one of {list(NODE_INDEXES)}, got {self.kind!r:.60}")
        check_number(self.exact_below, "exact_below", lo=0, integer=True)
        for name in ("m", "ef_construction", "ef_search", "candidates"):
            check_number(getattr(self, name), name, lo=1, integer=True)
        check_number(self.drift, "drift", lo=0.0, hi=2.0)
        check_number(self.seed, "seed", lo=0, integer=True)
        if self.ef_search < self.candidates:
            raise DataError("ef_search", f"must be at least candidates ({self.candidates}), got {self.ef_search}")

    def make(self, dim: int) -> "NodeIndex":
        """An empty index of ``dim``-dimensional rows searched this way."""
        if self.kind == "exact":
            return NodeIndex(dim)
        return HnswNodeIndex(dim, self)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> "NodeSearch":
        if not isinstance(d, dict):
            raise DataError("node_search", f"expected an object, got {type(d).__name__}")
        unknown = sorted(set(d) - set(cls.__dataclass_fields__))
        if unknown:
            raise DataError(f"node_search.{unknown[0]}", "not a node search setting")
        return cls(**d)


class HnswNodeIndex(NodeIndex):
    """:class:`NodeIndex` answered by HNSW once it holds ``search.exact_below`` rows (see the module docstring)."""

    def __init__(self, dim: int, search: NodeSearch):
        super().__init__(dim)
        self.search = search
        self.threshold = 0 if search.kind == "hnsw" else search.exact_below
        self.ann: Any = None  # the hnswlib.Index, once built
        self._indexed = np.zeros((64, dim), dtype=np.float32)  # [capacity, dim]: each row as HNSW holds it

    @property
    def approximate(self) -> bool:
        """Whether queries are answered by HNSW now."""
        return self.ann is not None

    def _build(self) -> None:
        ann = hnswlib.Index(space="ip", dim=self.dim)
        ann.init_index(max_elements=max(1024, 2 * self.n), ef_construction=self.search.ef_construction,
                       M=self.search.m, random_seed=self.search.seed)
        ann.set_num_threads(1)  # one thread: the same links on every run
        ann.set_ef(self.search.ef_search)
        self.ann = ann
        if self.n:
            self._index(np.arange(self.n))

    def _index(self, ids: np.ndarray) -> None:
        """Give HNSW rows ``ids`` as they are now (an id already there is relinked in place)."""
        if len(self._indexed) < len(self._x):
            grown = np.zeros_like(self._x)
            grown[: len(self._indexed)] = self._indexed
            self._indexed = grown
        if self.n > self.ann.get_max_elements():
            self.ann.resize_index(2 * self.n)
        self._indexed[ids] = self._x[ids]
        self.ann.add_items(self._x[ids], ids)

    def _put(self, ids: np.ndarray) -> None:
        if self.ann is not None:
            self._index(ids)
        elif self.n >= self.threshold:
            self._build()  # takes in every row stored so far

    def append(self, v: np.ndarray) -> int:
        i = super().append(v)
        self._put(np.array([i]))
        return i

    def update(self, i: int, v: np.ndarray) -> None:
        super().update(i, v)
        if self.ann is not None and float(self._x[i] @ self._indexed[i]) < 1.0 - self.search.drift:
            self._index(np.array([i]))

    def extend(self, vectors: np.ndarray) -> None:
        first = self.n
        super().extend(vectors)
        self._put(np.arange(first, self.n))

    def topk(self, q: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        if self.ann is None:
            return super().topk(q, k)
        k = min(check_k(k), self.n)
        q = np.asarray(q, dtype=np.float32)
        wanted = min(self.n, max(k, self.search.candidates))
        self.ann.set_ef(max(self.search.ef_search, wanted))  # per query: no answer depends on an earlier one
        try:
            labels, _ = self.ann.knn_query(q[None], k=wanted, num_threads=1)
        except RuntimeError:  # HNSW reached fewer than `wanted` rows (a sparse graph): ask the exact scan
            return super().topk(q, k)
        candidates = labels[0].astype(np.int64)
        return _top(candidates, exact_scores(self._x[candidates], q), k)

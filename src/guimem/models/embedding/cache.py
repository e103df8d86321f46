"""The content-hash cache in front of the embedders, and where cache misses are computed.

Cache: ``<cache_dir>/<embedder name>[@v<version>]/<key[:2]>/<key>.vec`` with ``key`` the sha256 of the
content (a text's UTF-8 bytes; an image file's bytes, or a decoded image's mode, size and
pixels). Re-running a stage with another threshold reads vectors instead of re-embedding. Each
entry is a verified cache entry (:func:`guimem.core.resume.read_entry`: a digest over its bytes,
its kind and key inside, only regular files read) that records the embedder, the shape and the
dtype of its vector; a vector is used only if all of them match and it is finite with unit norm.
Anything else — cut short, a flipped byte, another key's file, a link, a FIFO, zeroed, scaled or
non-finite values — is computed again and written over. A fresh vector that is not finite is
refused (a :class:`DataError`); one that is not of unit norm is used but not cached.

Misses are computed in chunks of :data:`CHUNK` items, each chunk's vectors cached as it arrives;
those of image files may be offloaded to an executor's workers (:class:`CachedImageEmbedder`).

Screenshots are read only inside their store: :func:`embed_screenshots` refuses a path that is
absolute, has a ``..`` part or resolves (through a symbolic link) outside ``store_root``.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
from PIL import Image

from guimem.core.data import DataError
from guimem.core.executor import Executor, LocalExecutor, RayExecutor
from guimem.core.io import check_finite, file_inside, readable_dir, relative_path
from guimem.core.progress import progress_bar
from guimem.core.resume import read_entry, write_entry
from guimem.core.store import open_image
from guimem.models.embedding.embedders import (
    EfficientNetLite0Embedder,
    ImageEmbedder,
    PixelEmbedder,
    TextEmbedder,
    _chunks,
    _empty,
    make_image_embedder,
    make_text_embedder,
)

DEFAULT_CACHE_DIR = Path(".cache/guimem/embeddings")


def text_key(text: str) -> str:
    """Cache key of a text: sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def image_key(image: Image.Image) -> str:
    """Cache key of a decoded image: sha256 of its mode, size and pixel bytes."""
    h = hashlib.sha256(f"{image.mode}:{image.width}x{image.height}:".encode())
    h.update(image.tobytes())
    return h.hexdigest()


def file_key(path: Path) -> str:
    """Cache key of an image file: sha256 of its bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


EMBEDDING_KIND = "guimem.embedding"
NORM_TOLERANCE = 1e-3  # |norm - 1| a cached vector may show (float32 normalisation leaves ~1e-7)


def unit_vector(v: np.ndarray, dim: int) -> bool:
    """Whether ``v`` is what every embedder returns for one input: a finite float32 ``[dim]`` of unit norm."""
    v = np.asarray(v)
    if v.dtype != np.float32 or v.shape != (dim,) or not np.isfinite(v).all():
        return False
    return abs(float(np.linalg.norm(v.astype(np.float64))) - 1.0) <= NORM_TOLERANCE


class EmbeddingCache:
    """Vectors on disk, one verified entry per (embedder name, content key); writes are atomic."""

    def __init__(self, root: str | Path = DEFAULT_CACHE_DIR):
        self.root = Path(root)

    def _path(self, name: str, key: str) -> Path:
        return self.root / _safe(name) / key[:2] / f"{key}.vec"

    @staticmethod
    def _max_bytes(dim: int) -> int:
        return 4 * dim + 4096  # the vector and its header

    def get(self, name: str, key: str, dim: int) -> np.ndarray | None:
        """The cached ``[dim]`` vector, or None when there is none or the entry is not exactly a
        unit ``[dim]`` float32 vector this embedder stored under this key (it is then computed again)."""
        entry = read_entry(self._path(name, key), EMBEDDING_KIND, key, self._max_bytes(dim))
        if entry is None:
            return None
        header, payload = entry
        if header.get("embedder") != name or header.get("shape") != [dim] or header.get("dtype") != "<f4" \
                or len(payload) != 4 * dim:
            return None
        v = np.frombuffer(payload, dtype="<f4").astype(np.float32)  # a writable copy, native order
        return v if unit_vector(v, dim) else None

    def put(self, name: str, key: str, vector: np.ndarray) -> None:
        """Store one vector, atomically; one that :func:`unit_vector` refuses is not stored."""
        v = np.asarray(vector, dtype=np.float32)
        if v.ndim != 1 or not unit_vector(v, len(v)):
            return
        header = {"embedder": name, "shape": [len(v)], "dtype": "<f4"}
        write_entry(self._path(name, key), EMBEDDING_KIND, key, header, v.astype("<f4").tobytes(),
                    self._max_bytes(len(v)))


CHUNK = 64  # items per unit of work (and per progress-bar step) when computing cache misses


def cache_namespace(embedder: ImageEmbedder | TextEmbedder) -> str:
    """The cache folder of an embedder: its name, plus the version of its numerics when it has one.

    A change that moves a model's float results bumps the version, so vectors cached by an
    older implementation are never mixed with new ones.
    """
    version = getattr(embedder, "version", None)
    return embedder.name if version is None else f"{embedder.name}@v{version}"


def _cached(name: str, dim: int, keys: Sequence[str], cache: EmbeddingCache | None,
            compute: Callable[[list[list[int]]], Iterable[np.ndarray]], progress: bool = False) -> np.ndarray:
    """Vectors for ``keys``: cache hits read, misses computed once per distinct key and stored.

    ``compute`` maps chunks of positions (``CHUNK`` each) to their vectors, chunk by chunk in
    order (in this process or in workers); a progress bar follows with ``progress``. Each chunk's
    vectors go into the cache as they arrive, so work stopped midway (a killed stage, a lost
    worker) is not done again: the next call computes only the chunks that never arrived.
    """
    out = np.zeros((len(keys), dim), dtype=np.float32)  # [n, dim]
    first: dict[str, int] = {}  # key -> first position that needs computing
    for i, key in enumerate(keys):
        v = cache.get(name, key, dim) if cache is not None else None
        if v is not None:
            out[i] = v
        elif key not in first:
            first[key] = i
    if first:
        positions = list(first.values())
        chunks = [[positions[j] for j in chunk] for chunk in _chunks(len(positions), CHUNK)]
        bar = progress_bar(total=len(positions), desc=f"embedding ({name})", unit="item", disable=not progress)
        index: dict[str, np.ndarray] = {}
        parts = iter(compute(chunks))
        try:
            for i, chunk in enumerate(chunks):
                part = next(parts, None)
                if part is None:  # a chunk without its vectors is an error, never a row of zeros
                    raise DataError("embedding", f"the {name} embedder gave vectors for {i} of {len(chunks)} chunks")
                _store_part(name, dim, keys, chunk, part, cache, index)
                bar.update(len(chunk))
        finally:
            if hasattr(parts, "close"):
                parts.close()  # shuts down a worker pool or Ray actors now, not at garbage collection
        bar.close()
        for i, key in enumerate(keys):
            if key in index:
                out[i] = index[key]
    return out


def _store_part(name: str, dim: int, keys: Sequence[str], chunk: Sequence[int], part: np.ndarray,
                cache: EmbeddingCache | None, index: dict[str, np.ndarray]) -> None:
    """One computed chunk checked, kept in ``index`` and put into the cache at once."""
    part = np.asarray(part)
    if part.shape != (len(chunk), dim):
        raise DataError("embedding", f"the {name} embedder returned {list(part.shape)} for "
                                     f"{len(chunk)} items of dim {dim}")
    check_finite(part, "embedding")
    for pos, row in zip(chunk, part):
        index[keys[pos]] = row
        if cache is not None:
            cache.put(name, keys[pos], row)


@dataclass(frozen=True)
class EmbedFiles:
    """The task a worker runs for :meth:`CachedImageEmbedder.embed_files`: the embedder ``name``
    made once per worker (one torch thread, on ``device``), then chunk after chunk of image files."""

    name: str
    batch_size: int
    device: str = "cpu"

    def setup(self) -> ImageEmbedder:
        import torch

        torch.set_num_threads(1)
        return make_image_embedder(self.name, self.batch_size, self.device)

    def run(self, embedder: ImageEmbedder, paths: list[str]) -> np.ndarray:
        return embedder.embed([open_image(Path(p), "screenshot") for p in paths])


class CachedImageEmbedder:
    """An image embedder behind the content-hash cache; also embeds image files by path.

    Cache misses among image files are embedded in chunks of ``CHUNK`` files by ``executor``
    (:mod:`guimem.core.executor`): by default in this process, or with ``workers > 1`` by that many
    spawned processes (one torch thread each); a :class:`~guimem.core.executor.RayExecutor` sends
    them to Ray actors, each loading the model once. A vector depends neither on the batch it was
    computed in nor on the threads of the process that computed it
    (:data:`~guimem.models.embedding.embedders.EMBED_THREADS`), so the result is bit-identical to
    embedding in this process (on CPU workers; a GPU rounds differently).
    """

    def __init__(self, inner: ImageEmbedder, cache: EmbeddingCache | None, workers: int = 1,
                 executor: Executor | None = None):
        self.inner, self.cache, self.workers = inner, cache, workers
        self.executor = executor if executor is not None else LocalExecutor(workers)
        self.name, self.dim = inner.name, inner.dim
        self._memo: dict[str, np.ndarray] = {}  # path -> vector, for this process

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        """``[n, dim]`` as the inner embedder gives it, read from the cache where possible."""
        keys = [image_key(im) for im in images]
        return _cached(cache_namespace(self.inner), self.dim, keys, self.cache,
                       lambda chunks: (self.inner.embed([images[i] for i in c]) for c in chunks))

    def _offloaded(self, n_chunks: int) -> bool:
        """Whether the executor's workers take the chunks (and can rebuild the inner embedder from its name)."""
        rebuildable = isinstance(self.inner, (EfficientNetLite0Embedder, PixelEmbedder))
        if isinstance(self.executor, RayExecutor):
            return rebuildable
        return rebuildable and self.executor.workers > 1 and n_chunks > 1

    def _compute_files(self, files: list[str], chunks: list[list[int]]) -> Iterable[np.ndarray]:
        """Vectors of ``files[chunk]`` for each chunk, in order (in the executor's workers when it pays off)."""
        if not self._offloaded(len(chunks)):
            yield from (self.inner.embed([open_image(Path(files[i]), "screenshot") for i in c]) for c in chunks)
            return
        task = EmbedFiles(self.name, getattr(self.inner, "batch_size", 8), self._worker_device())
        done = 0
        try:  # absolute paths: a cluster's workers run elsewhere (they need the files on a shared file system)
            for part in self.executor.map(task, [[str(Path(files[i]).resolve()) for i in c] for c in chunks]):
                yield part
                done += 1
        except BrokenProcessPool as err:  # e.g. a __main__ that spawned workers cannot re-import (stdin)
            warnings.warn(f"embedding workers failed ({err}); embedding the rest in this process", RuntimeWarning)
            yield from (self.inner.embed([open_image(Path(files[i]), "screenshot") for i in c]) for c in chunks[done:])

    def _worker_device(self) -> str:
        """Where offloaded chunks are embedded: on a GPU when the executor's workers reserve one."""
        spec = getattr(self.executor, "spec", None)
        return "cuda" if spec is not None and spec.gpus_per_worker > 0 else "cpu"

    def embed_files(self, paths: Sequence[str | Path], progress: bool = False) -> np.ndarray:
        """``[n, dim]`` for image files, keyed by their bytes; decoded only on a cache miss. Vectors a
        GPU computed are cached apart from the CPU's (a GPU rounds differently)."""
        todo = sorted({str(p) for p in paths if str(p) not in self._memo})
        if todo:
            keys = [_file_key_checked(Path(p)) for p in todo]
            namespace = cache_namespace(self.inner)
            if self._worker_device() != "cpu" and self._offloaded(2):
                namespace += f"@{self._worker_device()}"
            vectors = _cached(namespace, self.dim, keys, self.cache,
                              lambda chunks: self._compute_files(todo, chunks), progress)
            self._memo.update(zip(todo, vectors))
        if not paths:
            return _empty(self.dim)
        return np.stack([self._memo[str(p)] for p in paths])


class CachedTextEmbedder:
    """A text embedder behind the content-hash cache."""

    def __init__(self, inner: TextEmbedder, cache: EmbeddingCache | None):
        self.inner, self.cache = inner, cache
        self.name, self.dim = inner.name, inner.dim
        self._memo: dict[str, np.ndarray] = {}  # text -> vector, for this process

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[n, dim]`` as the inner embedder gives it, read from the cache where possible."""
        todo = sorted({t for t in texts if t not in self._memo})
        if todo:
            vectors = _cached(cache_namespace(self.inner), self.dim, [text_key(t) for t in todo], self.cache,
                              lambda chunks: (self.inner.embed([todo[i] for i in c]) for c in chunks))
            self._memo.update(zip(todo, vectors))
        if not texts:
            return _empty(self.dim)
        return np.stack([self._memo[t] for t in texts])


def _file_key_checked(path: Path) -> str:
    try:
        return file_key(path)
    except OSError as err:
        raise DataError("screenshot", f"cannot read image file: {err.strerror or err}", str(path)) from None


def embed_screenshots(embedder: ImageEmbedder, store_root: str | Path, rel_paths: Iterable[str],
                      progress: bool = False) -> dict[str, np.ndarray]:
    """Unit vectors ``[dim]`` per distinct screenshot path (relative to ``store_root``).

    A path that is absolute, has a ``..`` part or resolves outside ``store_root`` is refused
    (field ``screenshot``) before any file is read.
    """
    root = Path(store_root)
    if not root.is_dir() and (root.parent / f".{root.name}.old").is_dir():
        root = readable_dir(root, "episode store")  # a store left as only its backup is read too
    unique = sorted({relative_path(p, "screenshot", str(root)) for p in rel_paths})
    files = [file_inside(root, p, "screenshot") for p in unique]
    for f in files:
        if not f.is_file():
            raise DataError("screenshot", "missing, or not a file", str(f))
    if not unique:
        return {}
    if hasattr(embedder, "embed_files"):  # cached embedders read files by content hash
        vectors = embedder.embed_files(files, progress=progress)
    else:
        vectors = embedder.embed([open_image(f, "screenshot") for f in files])
    return dict(zip(unique, vectors))


def cached_image_embedder(name: str, cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
                          batch_size: int = 8, device: str = "cpu", workers: int = 1,
                          executor: Executor | None = None) -> CachedImageEmbedder:
    """``make_image_embedder(name)`` behind a cache in ``cache_dir`` (None: no cache); new screens
    embedded by ``executor`` (default: ``workers`` local processes)."""
    cache = EmbeddingCache(cache_dir) if cache_dir is not None else None
    return CachedImageEmbedder(make_image_embedder(name, batch_size, device), cache, workers, executor)


def cached_text_embedder(name: str, cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
                         device: str = "cpu") -> CachedTextEmbedder:
    """``make_text_embedder(name)`` behind a cache in ``cache_dir`` (None: no cache)."""
    cache = EmbeddingCache(cache_dir) if cache_dir is not None else None
    return CachedTextEmbedder(make_text_embedder(name, device), cache)

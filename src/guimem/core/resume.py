"""Finished chunks of heavy work, kept on disk by content key: a stage stopped midway (a killed job,
a lost cluster) runs again and computes only the chunks it had not finished.

:func:`cached_map` is :meth:`Executor.map <guimem.core.executor.LocalExecutor.map>` with a
:class:`ChunkCache`: each chunk's result is stored the moment it arrives, and a chunk whose key is
already stored is read back instead of run. A key is the hash of everything the result depends on:

* the task's ``fingerprint()`` — its parameters and a digest of the files it loads (the actor's
  weights, the memories, the routers); a task that cannot say (a model named only by a hub id,
  whose files it does not own) returns None and is never cached;
* the code: every source file of this package and the versions of the numeric libraries
  (:func:`code_fingerprint`), so an edit to the code never reads a result the old code made;
* the chunk itself (its pickled bytes).

A key that differs only where nothing changed is a miss, never a wrong hit: the cache can cost
time, not correctness. Entries are never removed by this module; delete the folder to reclaim it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import pickle
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from guimem.core.io import atomic_write_bytes

_LIBRARIES = ("numpy", "torch", "transformers", "pillow", "scikit-learn")
_MISSING = object()


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A digest of this package's source files and the numeric libraries' versions."""
    package = Path(__file__).resolve().parent.parent
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for name in _LIBRARIES:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        h.update(f"{name}={version}\0".encode())
    return h.hexdigest()


def tree_digest(*paths: str | os.PathLike, contents: bool = True) -> str:
    """A digest of the files under ``paths`` (a missing path counts as empty): their relative names
    and bytes, or with ``contents=False`` their sizes and modification times (for trees too large to
    read, such as a screen store: a copied or rewritten file then misses, it never hits wrongly)."""
    h = hashlib.blake2b(digest_size=16)
    for top in map(Path, paths):
        h.update(f"{top}\0".encode())
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else []
        for f in files:
            h.update(f.relative_to(top.parent).as_posix().encode() + b"\0")
            if contents:
                h.update(f.read_bytes())
            else:
                st = f.stat()
                h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
            h.update(b"\0")
    return h.hexdigest()


class ChunkCache:
    """Results of finished chunks, one pickle per key under ``folder`` (written atomically)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.hits = self.stored = 0

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.pkl"

    def get(self, key: str) -> Any:
        """The stored result, or ``_MISSING`` (also for an entry that cannot be read back)."""
        try:
            value = pickle.loads(self._path(key).read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
            return _MISSING
        self.hits += 1
        return value

    def put(self, key: str, value: Any) -> None:
        atomic_write_bytes(self._path(key), pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        self.stored += 1


def chunk_key(fingerprint: str, chunk: Any) -> str:
    """The key of one chunk of a task whose fingerprint (with the code's) is ``fingerprint``."""
    h = hashlib.blake2b(digest_size=20)
    h.update(fingerprint.encode() + b"\0" + code_fingerprint().encode() + b"\0")
    h.update(pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL))
    return h.hexdigest()


def cached_map(executor: Any, task: Any, chunks: Sequence[Any], cache: ChunkCache | None) -> Iterator[Any]:
    """``executor.map(task, chunks)``, in order, reading the chunks ``cache`` holds and storing each
    new result as it arrives. Without a cache, or for a task whose ``fingerprint()`` is None, it is
    ``executor.map`` itself."""
    fingerprint = task.fingerprint() if cache is not None and hasattr(task, "fingerprint") else None
    if fingerprint is None:
        yield from executor.map(task, list(chunks))
        return
    keys = [chunk_key(fingerprint, chunk) for chunk in chunks]
    done = {i: value for i, key in enumerate(keys) if (value := cache.get(key)) is not _MISSING}
    todo = [i for i in range(len(chunks)) if i not in done]
    fresh = executor.map(task, [chunks[i] for i in todo]) if todo else iter(())
    for i in range(len(chunks)):
        if i in done:
            yield done.pop(i)
        else:  # todo is in chunk order, so the next fresh result is chunk i's
            value = next(fresh)
            cache.put(keys[i], value)
            yield value

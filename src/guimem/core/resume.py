"""Finished chunks of heavy work, kept on disk by content key: a stopped stage (a killed job, a lost
cluster) runs again and computes only the chunks it had not finished; and the one safe way every
cache of this package reads an entry back.

:func:`cached_map` is :meth:`Executor.map <guimem.core.executor.LocalExecutor.map>` with a
:class:`ChunkCache`: each chunk's result is stored the moment it arrives, and a chunk whose key is
already stored is read back instead of run. A key is the hash of everything the result depends on:

* the task's ``fingerprint()`` — its parameters (the device its model runs on among them) and a
  digest of the files it loads (the actor's weights, the memories, the routers); a task that
  cannot say returns None, and its chunks are not kept (a warning says so);
* the code: every source file of this package as it was imported, the Python version and every
  installed distribution's version (:func:`code_fingerprint`), so an edit to the code or an
  upgrade never reads a result the old ones made. A worker checks that it runs the code the key
  names (:func:`check_same_code`, in a task's ``setup``): a cluster node with other code stops the
  job rather than storing its results under this key;
* the chunk itself, in a canonical encoding of its values (:func:`chunk_key`; never pickled).

**Entries cannot run code, and are verified.** A cache entry (a chunk's result here, an embedding
vector, an OCR reading) is one file written by :func:`write_entry`: a magic line, a BLAKE2b digest
of everything after it, a JSON header that names the entry's kind and key, and raw array bytes.
:func:`read_entry` reads only a regular file (a link, FIFO, socket or device is never opened for
reading, so never waited on), of bounded size, and returns None — a miss, recomputed and written
over — for anything else: a bad digest (a flipped byte, a cut-short file), another kind or key (a
file moved or copied under another name), a header that is not the expected JSON. A chunk's
result is stored as JSON for its structure (lists, tuples, dicts, str/int/float/bool/None, the
dataclasses the task declares in ``result_types``) and raw bytes for NumPy arrays and scalars
(:func:`encode_value`); a value of any other type is not cached (a warning says so), never
pickled, and decoding builds only those declared classes. The digest is a checksum against
corruption and stray edits, not a signature: whoever can write the cache folder can write a
well-formed entry.

A key that differs only where nothing changed is a miss: the cache can cost time. What it does not
see is the hardware: results computed on another GPU model (or CUDA version) are read back as
they are. Entries are never removed by this module; delete the folder to reclaim it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import importlib.metadata
import math
import os
import stat
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from guimem.core.data import DataError
from guimem.core.io import MAX_JSON_DEPTH, atomic_write_bytes, json_depth, json_text, parse_json
from guimem.core.progress import note

_MISSING = object()


def _code_fingerprint() -> str:
    package = Path(__file__).resolve().parent.parent
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(f"python {sys.version}\0".encode())
    versions = {(d.metadata["Name"] or "").lower(): d.version for d in importlib.metadata.distributions()}
    for name, version in sorted(versions.items()):
        h.update(f"{name}={version}\0".encode())
    return h.hexdigest()


_CODE = _code_fingerprint()  # at import: the code this process runs is the code it imported


def code_fingerprint() -> str:
    """A digest of this package's source files (as imported), the Python version and every
    installed distribution's name and version."""
    return _CODE


def check_same_code(expected: str) -> None:
    """Raise a DataError unless this process runs the code ``expected`` names (a worker's check
    that the results it makes belong under its driver's keys)."""
    if expected != _CODE:
        raise DataError("code", "this worker runs other code or libraries than the process that sent it "
                                "the work (install the same guimem and requirements on every node)")


def tree_digest(*paths: str | os.PathLike, contents: bool = True) -> str:
    """A digest of the files under ``paths`` (a missing path counts as empty): their relative names
    and bytes, or with ``contents=False`` their size, inode and modification and change times (for
    trees too large to read, such as model weights or a screen store: a rewritten or copied file
    changes its change time, which no copy can carry over, so it misses)."""
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
                h.update(f"{st.st_size}:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}".encode())
            h.update(b"\0")
    return h.hexdigest()


# ============================================================================= verified entries
ENTRY_MAGIC = b"guimem-cache-entry 1\n"  # first line of every cache entry (this format's version)
_DIGEST = 64  # hex characters of the BLAKE2b-256 digest that follows the magic line


def read_regular(path: str | os.PathLike, max_bytes: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes`` (a symbolic link, FIFO,
    socket, device or folder is never read, nor waited on); else None."""
    try:
        before = os.lstat(path)
        if not stat.S_ISREG(before.st_mode) or before.st_size > max_bytes:
            return None
        # O_NOFOLLOW: a link swapped in after the lstat is refused; O_NONBLOCK: a FIFO never blocks the open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
            return None
        chunks, left = [], max_bytes + 1
        while left > 0 and (block := os.read(fd, min(left, 1 << 24))):
            chunks.append(block)
            left -= len(block)
        data = b"".join(chunks)
        return data if len(data) <= max_bytes else None
    except OSError:
        return None
    finally:
        os.close(fd)


def seal_entry(kind: str, key: str, header: Mapping[str, Any], payload: bytes = b"") -> bytes:
    """The bytes of a cache entry: magic line, digest, then the header (with ``kind`` and ``key``) and payload."""
    head = json_text({**header, "kind": kind, "key": key}).encode("utf-8")
    body = len(head).to_bytes(8, "little") + head + payload
    return ENTRY_MAGIC + hashlib.blake2b(body, digest_size=32).hexdigest().encode() + b"\n" + body


def open_entry(data: bytes | None, kind: str, key: str) -> tuple[dict[str, Any], bytes] | None:
    """``(header, payload)`` of the sealed ``data`` if its digest holds and it is the entry of
    ``kind`` under ``key``; else None."""
    if data is None or not data.startswith(ENTRY_MAGIC):
        return None
    rest = data[len(ENTRY_MAGIC):]
    digest, body = rest[:_DIGEST], rest[_DIGEST + 1:]
    if len(rest) < _DIGEST + 9 or rest[_DIGEST:_DIGEST + 1] != b"\n":
        return None
    if not hmac.compare_digest(digest, hashlib.blake2b(body, digest_size=32).hexdigest().encode()):
        return None
    n = int.from_bytes(body[:8], "little")
    if n > len(body) - 8:
        return None
    try:
        header = parse_json(body[8:8 + n].decode("utf-8"))
    except (DataError, UnicodeDecodeError):
        return None
    if not isinstance(header, dict) or header.get("kind") != kind or header.get("key") != key:
        return None
    return header, body[8 + n:]


def read_entry(path: str | os.PathLike, kind: str, key: str, max_bytes: int) -> tuple[dict[str, Any], bytes] | None:
    """The verified ``(header, payload)`` of the cache entry at ``path`` (:func:`read_regular`,
    :func:`open_entry`); None for a missing, non-regular, oversized, corrupt or foreign entry."""
    return open_entry(read_regular(path, max_bytes), kind, key)


def write_entry(path: str | os.PathLike, kind: str, key: str, header: Mapping[str, Any], payload: bytes = b"",
                max_bytes: int | None = None) -> bool:
    """Store a cache entry atomically (over whatever stood there: a link or FIFO is replaced, never
    followed); False, with a warning, when it cannot be (too large for its readers, or a folder in
    the way): a cache that cannot keep a result loses time, not data."""
    try:
        data = seal_entry(kind, key, header, payload)
    except (DataError, UnicodeEncodeError) as err:  # NaN, or a string with a lone surrogate: not JSON
        warnings.warn(f"{kind}: an entry that cannot be written as JSON ({str(err)[:80]}); not cached",
                      RuntimeWarning, stacklevel=2)
        return False
    if max_bytes is not None and len(data) > max_bytes:
        warnings.warn(f"{kind}: an entry of {len(data)} bytes is over the {max_bytes} its readers accept; "
                      "not cached", RuntimeWarning, stacklevel=2)
        return False
    try:
        atomic_write_bytes(path, data)
    except (OSError, DataError) as err:
        warnings.warn(f"{kind}: cannot store a cache entry at {str(path)!r:.200} ({str(err)[:120]}); not cached",
                      RuntimeWarning, stacklevel=2)
        return False
    return True


# ============================================================================= values as JSON + arrays
class NotCacheable(TypeError):
    """A value (or chunk) holds a type the cache does not encode; it is then not cached."""


_ARRAY_KINDS = "biufcUS"  # booleans, integers, floats, complex, fixed-width strings: raw bytes, no objects


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def encode_value(value: Any, types: Sequence[type] = ()) -> tuple[Any, list[np.ndarray]]:
    """``value`` as a JSON tree plus the arrays it holds (NumPy arrays and scalars); the dataclasses
    allowed are exactly ``types``. Anything else is :class:`NotCacheable`."""
    allowed = {cls: _type_name(cls) for cls in types}
    arrays: list[np.ndarray] = []

    def array(a: np.ndarray) -> int:
        if a.dtype.kind not in _ARRAY_KINDS or a.dtype.fields is not None or a.dtype.subdtype is not None:
            raise NotCacheable(f"an array of dtype {a.dtype} cannot be cached")
        arrays.append(a)
        return len(arrays) - 1

    def enc(x: Any) -> Any:
        if x is None or type(x) in (bool, int, str):
            return x
        if type(x) is float:
            return x if math.isfinite(x) else {"$": "f", "v": repr(x)}
        if type(x) is np.ndarray:
            return {"$": "a", "i": array(x)}
        if isinstance(x, np.generic):
            return {"$": "s", "i": array(np.asarray(x))}
        if type(x) is list:
            return [enc(v) for v in x]
        if type(x) is tuple:
            return {"$": "t", "v": [enc(v) for v in x]}
        if type(x) is dict:
            return {"$": "d", "v": [[enc(k), enc(v)] for k, v in x.items()]}
        if type(x) in allowed:
            fields = dataclasses.fields(x)
            if any(not f.init for f in fields):
                raise NotCacheable(f"{allowed[type(x)]} has fields set outside __init__")
            return {"$": "c", "n": allowed[type(x)], "v": {f.name: enc(getattr(x, f.name)) for f in fields}}
        raise NotCacheable(f"a {type(x).__module__}.{type(x).__qualname__} is not among the types the cache "
                           f"encodes (add its dataclass to the task's result_types)")

    return enc(value), arrays


class _Corrupt(ValueError):
    """An entry's tree or arrays do not decode to a value."""


def decode_value(tree: Any, arrays: Sequence[np.ndarray], types: Sequence[type] = ()) -> Any:
    """The value :func:`encode_value` encoded as ``tree`` and ``arrays``; :class:`_Corrupt` if it is not one."""
    allowed = {_type_name(cls): cls for cls in types}

    def item(node: dict) -> np.ndarray:
        i = node.get("i")
        if type(i) is not int or not 0 <= i < len(arrays):
            raise _Corrupt("array index")
        return arrays[i]

    def dec(x: Any) -> Any:
        if x is None or type(x) in (bool, int, str, float):
            return x
        if type(x) is list:
            return [dec(v) for v in x]
        if type(x) is not dict:
            raise _Corrupt("node")
        tag, v = x.get("$"), x.get("v")
        if tag == "f" and v in ("nan", "inf", "-inf"):
            return float(v)
        if tag == "a":
            return item(x).copy()  # writable and its own, as a freshly computed array
        if tag == "s":
            a = item(x)
            if a.ndim != 0:
                raise _Corrupt("scalar")
            return a[()]
        if tag == "t" and type(v) is list:
            return tuple(dec(e) for e in v)
        if tag == "d" and type(v) is list:
            if not all(type(p) is list and len(p) == 2 for p in v):
                raise _Corrupt("dict")
            return {dec(k): dec(e) for k, e in v}
        if tag == "c" and type(v) is dict and x.get("n") in allowed:
            cls = allowed[x["n"]]
            if set(v) != {f.name for f in dataclasses.fields(cls)}:
                raise _Corrupt("fields")
            return cls(**{name: dec(e) for name, e in v.items()})
        raise _Corrupt("tag")

    try:
        return dec(tree)
    except _Corrupt:
        raise
    except (DataError, TypeError, ValueError, KeyError, AttributeError, OverflowError, RecursionError) as err:
        raise _Corrupt(str(err)[:120]) from None


def pack_arrays(arrays: Sequence[np.ndarray]) -> tuple[list[dict[str, Any]], bytes]:
    """Each array's dtype, shape and memory order, and all their bytes end to end."""
    specs, blobs = [], []
    for a in arrays:
        order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"  # as pickle keeps it
        specs.append({"dtype": a.dtype.str, "shape": list(a.shape), "order": order})
        blobs.append(a.tobytes(order=order))
    return specs, b"".join(blobs)


def unpack_arrays(specs: Any, payload: bytes) -> list[np.ndarray]:
    """The arrays :func:`pack_arrays` described by ``specs`` in ``payload``; :class:`_Corrupt` unless
    they are exactly its bytes, of plain dtypes and sane shapes."""
    if type(specs) is not list:
        raise _Corrupt("arrays")
    out, offset = [], 0
    for spec in specs:
        if type(spec) is not dict or type(spec.get("dtype")) is not str or type(spec.get("shape")) is not list \
                or spec.get("order") not in ("C", "F") or len(spec["shape"]) > 32:
            raise _Corrupt("array spec")
        try:
            dtype = np.dtype(spec["dtype"])
        except (TypeError, ValueError, SyntaxError):
            raise _Corrupt("dtype") from None
        if dtype.kind not in _ARRAY_KINDS or dtype.fields is not None or dtype.subdtype is not None \
                or dtype.str != spec["dtype"]:
            raise _Corrupt("dtype")
        shape = spec["shape"]
        if not all(type(n) is int and n >= 0 for n in shape):
            raise _Corrupt("shape")
        size = math.prod(shape) * dtype.itemsize
        if offset + size > len(payload):
            raise _Corrupt("short")
        a = np.frombuffer(payload, dtype=dtype, count=math.prod(shape), offset=offset) if size else np.zeros(0, dtype)
        out.append(a.reshape(shape, order=spec["order"]))
        offset += size
    if offset != len(payload):
        raise _Corrupt("long")
    return out


# ============================================================================= the chunk cache
CHUNK_KIND = "guimem.chunk"
MAX_CHUNK_BYTES = 1 << 34  # 16 GiB: larger than any chunk of step records; a larger entry is refused unread


class ChunkCache:
    """Results of finished chunks, one verified entry per key under ``folder`` (written atomically;
    see the module doc): an entry that is not exactly what this code wrote for this key is a miss."""

    def __init__(self, folder: str | os.PathLike, max_bytes: int = MAX_CHUNK_BYTES):
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        self.hits = self.stored = 0

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.chunk"

    def get(self, key: str, types: Sequence[type] = ()) -> Any:
        """The stored result, or ``_MISSING`` (also for an entry that does not verify or decode)."""
        entry = read_entry(self._path(key), CHUNK_KIND, key, self.max_bytes)
        if entry is None:
            return _MISSING
        header, payload = entry
        try:
            value = decode_value(header.get("value"), unpack_arrays(header.get("arrays"), payload), types)
        except (ValueError, TypeError):  # _Corrupt among them
            return _MISSING
        self.hits += 1
        return value

    def tell_hits(self, what: str) -> None:
        """Say how many of the results ``what`` counts were read back, if any, as a
        :func:`~guimem.core.progress.note`: a stage's runner shows it on its terminal and leaves it
        out of the report, which is then the same whether or not an earlier run had finished some
        of its work."""
        if self.hits:
            note(f"{self.hits} {what} read back from {self.folder} (an earlier run finished them)")

    def put(self, key: str, value: Any, types: Sequence[type] = ()) -> None:
        """Store ``value`` under ``key``; one holding a type :func:`encode_value` does not take is
        not stored (:class:`NotCacheable`)."""
        tree, arrays = encode_value(value, types)
        specs, payload = pack_arrays(arrays)
        header = {"value": tree, "arrays": specs}
        try:
            text = json_text(header)
            text.encode("utf-8")
        except (DataError, UnicodeEncodeError) as err:  # e.g. a string holding a lone surrogate
            raise NotCacheable(f"the result cannot be written as JSON ({str(err)[:80]})") from None
        if json_depth(text) > MAX_JSON_DEPTH - 2:
            raise NotCacheable(f"the result is nested deeper than {MAX_JSON_DEPTH - 2} levels")
        if write_entry(self._path(key), CHUNK_KIND, key, header, payload, self.max_bytes):
            self.stored += 1


def _canonical(h: Any, x: Any) -> None:
    """Feed ``x`` to the hash ``h`` in an encoding where equal values (of the types chunks hold) give
    equal bytes and different ones different bytes; any other type is :class:`NotCacheable`."""
    def text(tag: bytes, data: bytes) -> None:
        h.update(tag + len(data).to_bytes(8, "little") + data)

    if x is None:
        h.update(b"N")
    elif type(x) is bool:
        h.update(b"T" if x else b"F")
    elif type(x) is int:
        text(b"i", str(x).encode())
    elif type(x) is float:
        text(b"f", x.hex().encode())
    elif type(x) is str:
        text(b"s", x.encode("utf-8", "surrogatepass"))
    elif type(x) is bytes:
        text(b"b", x)
    elif type(x) is np.ndarray or isinstance(x, np.generic):
        a = np.asarray(x)
        if a.dtype.kind not in _ARRAY_KINDS or a.dtype.fields is not None:
            raise NotCacheable(f"an array of dtype {a.dtype} has no canonical encoding")
        text(b"a" if type(x) is np.ndarray else b"g", f"{a.dtype.str}{a.shape}".encode())
        text(b"", np.ascontiguousarray(a).tobytes())
    elif isinstance(x, Image.Image):
        palette = x.getpalette() if x.mode in ("P", "PA") else None
        text(b"I", f"{x.mode}:{x.width}x{x.height}:{palette}".encode())
        text(b"", x.tobytes())
    elif type(x) in (list, tuple):
        text(b"[" if type(x) is list else b"(", str(len(x)).encode())
        for v in x:
            _canonical(h, v)
    elif type(x) is dict:
        text(b"{", str(len(x)).encode())
        for k, v in x.items():
            _canonical(h, k)
            _canonical(h, v)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        fields = dataclasses.fields(x)
        text(b"c", f"{_type_name(type(x))}:{len(fields)}".encode())
        for f in fields:
            text(b"", f.name.encode())
            _canonical(h, getattr(x, f.name))
    else:
        raise NotCacheable(f"a {type(x).__module__}.{type(x).__qualname__} in a chunk has no canonical encoding")


def chunk_key(fingerprint: str, chunk: Any) -> str:
    """The key of one chunk of a task whose fingerprint (with the code's) is ``fingerprint``: a hash
    of a canonical encoding of the chunk's values (:class:`NotCacheable` for a type it has none for)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(fingerprint.encode() + b"\0" + code_fingerprint().encode() + b"\0")
    _canonical(h, chunk)
    return h.hexdigest()


def cached_map(executor: Any, task: Any, chunks: Sequence[Any], cache: ChunkCache | None) -> Iterator[Any]:
    """``executor.map(task, chunks)``, in order, reading the chunks ``cache`` holds and storing each
    new result as it arrives. Without a cache, or for a task whose ``fingerprint()`` is None (or whose
    chunks hold a type without a canonical encoding), it is ``executor.map`` itself. The dataclasses
    a result may hold are the task's ``result_types``; a result holding any other type is not kept."""
    fingerprint = task.fingerprint() if cache is not None and hasattr(task, "fingerprint") else None
    keys: list[str] | None = None
    if fingerprint is not None:
        try:
            keys = [chunk_key(fingerprint, chunk) for chunk in chunks]
        except NotCacheable as err:
            warnings.warn(f"{type(task).__name__}: {err}, so its chunks are not kept: a stopped run will start "
                          "again from the beginning", stacklevel=2)
    elif cache is not None:
        warnings.warn(f"{type(task).__name__}: its inputs cannot be fingerprinted (see its fingerprint()), "
                      "so its chunks are not kept: a stopped run will start again from the beginning",
                      stacklevel=2)
    if keys is None or cache is None:
        yield from executor.map(task, list(chunks))
        return
    types = tuple(getattr(task, "result_types", ()))
    done = {i: value for i, key in enumerate(keys) if (value := cache.get(key, types)) is not _MISSING}
    todo = [i for i in range(len(chunks)) if i not in done]
    fresh = executor.map(task, [chunks[i] for i in todo]) if todo else iter(())
    refused = False
    for i in range(len(chunks)):
        if i in done:
            yield done.pop(i)
        else:  # todo is in chunk order, so the next fresh result is chunk i's
            value = next(fresh)
            try:
                cache.put(keys[i], value, types)
            except NotCacheable as err:
                if not refused:
                    warnings.warn(f"{type(task).__name__}: a result is not kept ({err})", stacklevel=2)
                refused = True
            yield value

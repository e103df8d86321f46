"""Readers that name the file of bad bytes, and the checks every read of outside data goes through.

:func:`read_json` and :func:`read_jsonl` turn every way a file can be bad — missing, a folder,
not UTF-8, malformed, nested too deep, numbers too large, a key given twice in one object — into a
:class:`~guimem.core.data.DataError` naming the file (and the line), never a bare
``RecursionError`` or ``OverflowError``. :func:`check_finite` refuses NaN and infinities in a
loaded array and :func:`check_number` a value out of its range; :func:`relative_path` and
:func:`file_inside` keep a path named by a file inside its folder; :func:`read_npy` and
:func:`check_safetensors` check an array file's header before reading its data.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from safetensors import SafetensorError, safe_open

from guimem.core.data import DataError

MAX_JSON_DEPTH = 64  # deeper nesting than any guimem file has; refused before it can exhaust the stack


# A string, or an unterminated one up to the end: scanning never restarts, so this is linear
# even for an unterminated '"\"\"\"...' (the plain '"(...)*"' rescans it from every quote).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)


def json_depth(text: str) -> int:
    """The deepest bracket nesting of JSON ``text`` (brackets inside strings not counted), in linear time."""
    if text.count("[") + text.count("{") <= 1:
        return text.count("[") + text.count("{")
    codes = np.frombuffer(_JSON_STRING.sub("", text).encode("utf-8", "replace"), dtype=np.uint8)
    opens = (codes == ord("[")) | (codes == ord("{"))
    closes = (codes == ord("]")) | (codes == ord("}"))
    return int(np.cumsum(opens.astype(np.int32) - closes).max(initial=0))


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict; a key given twice raises (JSON leaves it open, Python keeps the last)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        raise _DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return obj


def parse_json(text: str, where: str | None = None, field: str = "json") -> Any:
    """``text`` parsed as JSON; any failure is a :class:`DataError` at ``where`` (``field``), a key
    given twice in one object among them (which of the two a reader means is not knowable)."""
    if json_depth(text) > MAX_JSON_DEPTH:
        raise DataError(field, f"nested deeper than {MAX_JSON_DEPTH} levels", where)
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as dup:
        raise DataError(field, f"the key {dup.key!r:.80} is given twice in one object", where) from None
    except json.JSONDecodeError as err:
        raise DataError(field, f"malformed JSON at line {err.lineno} column {err.colno}: {err.msg}", where) from None
    except (ValueError, OverflowError, RecursionError) as err:  # e.g. an integer of more than 4300 digits
        raise DataError(field, f"unreadable JSON: {str(err)[:120]}", where) from None


def read_text(path: str | os.PathLike) -> str:
    """The UTF-8 text of the file ``path``; missing, a folder or not UTF-8 is a :class:`DataError`."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):  # a FIFO or device would block or never end
            raise DataError("file", "is not a regular file", str(path))
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError("file", "missing", str(path)) from None
    except IsADirectoryError:
        raise DataError("file", "is a folder, expected a file", str(path)) from None
    except UnicodeDecodeError as err:
        raise DataError("file", f"not UTF-8 text ({err.reason} at byte {err.start})", str(path)) from None
    except OSError as err:
        raise DataError("file", f"unreadable ({err.strerror})", str(path)) from None


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document in ``path``; every way it can be bad is a :class:`DataError` naming it."""
    return parse_json(read_text(path), str(path))


def read_jsonl(path: str | os.PathLike) -> list[tuple[int, Any]]:
    """``(line number, document)`` for every non-blank line of the JSON-lines file ``path``."""
    out = []
    # split("\n"), not splitlines(): U+2028 and other Unicode breaks may sit raw inside a JSON string
    for lineno, line in enumerate(read_text(path).split("\n"), start=1):
        if line.strip():
            out.append((lineno, parse_json(line, f"{path}, line {lineno}", field="line")))
    return out


def check_finite(array: np.ndarray, field: str, path: str | None = None) -> np.ndarray:
    """``array`` if every value is finite; else a :class:`DataError` naming the field and the first bad index."""
    a = np.asarray(array)
    if a.dtype.kind in "fc" and not np.isfinite(a).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
        raise DataError(field, f"holds a non-finite value at index {bad}", path)
    return array


_MAX_FLOAT = 1.7976931348623157e308  # sys.float_info.max


def check_number(value: Any, field: str, lo: float | None = None, hi: float | None = None,
                 integer: bool = False, path: str | None = None) -> float | int:
    """``value`` if it is a finite number (an integer if ``integer``) within ``[lo, hi]``; else a DataError."""
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise DataError(field, f"expected {kind}, got {type(value).__name__} {value!r:.60}", path)
    if isinstance(value, float) and not math.isfinite(value):
        raise DataError(field, f"expected a finite number, got {value!r}", path)
    if (lo is not None and value < lo) or (hi is not None and value > hi):  # exact, for integers of any size
        span = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
        raise DataError(field, f"must be in {span}, got {value!r:.80}", path)
    if not integer and isinstance(value, int) and abs(value) > _MAX_FLOAT:  # read as a real number, it is infinite
        raise DataError(field, f"expected a finite number, got an integer of {len(str(abs(value)))} digits", path)
    return value


# ============================================================================= paths and arrays
def relative_path(rel: Any, field: str, path: str | None = None) -> str:
    """``rel`` if it is a non-empty relative path with no ``..`` part (a path that stays inside the
    folder it is joined to); else a :class:`DataError` at ``path`` under ``field``."""
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise DataError(field, f"expected a non-empty relative path, got {rel!r:.80}", path)
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        raise DataError(field, f"must be a relative path inside its folder (not absolute, no '..'), got {rel!r:.80}",
                        path)
    return rel


def file_inside(root: str | os.PathLike, rel: Any, field: str, path: str | None = None) -> Path:
    """``root / rel`` for a :func:`relative_path` ``rel`` that, every symbolic link followed, stays
    inside ``root``; else a :class:`DataError` at ``path`` (default: ``root``) under ``field``."""
    where = str(root) if path is None else path
    target = Path(root) / relative_path(rel, field, where)
    step = os.fspath(root)
    for part in Path(rel).parts:  # with no '..', only a link below root can lead out (a few lstat calls)
        step = os.path.join(step, part)
        if os.path.islink(step):
            if not target.resolve().is_relative_to(Path(root).resolve()):
                raise DataError(field, f"{rel!r:.80} resolves outside {str(root)!r} (to {str(target.resolve())!r})",
                                where)
            break
    return target


def refuse_overlap(source: str | os.PathLike, target: str | os.PathLike, field: str = "target",
                   path: str | None = None) -> None:
    """Refuse (:class:`DataError` under ``field``) a ``target`` folder that is ``source``, lies inside
    it, or holds it, every symbolic link followed: a write there would corrupt what it reads."""
    src, dst = Path(source).resolve(), Path(target).resolve()
    if src == dst or dst.is_relative_to(src) or src.is_relative_to(dst):
        how = "is" if src == dst else "lies inside" if dst.is_relative_to(src) else "holds"
        raise DataError(field, f"{str(target)!r:.200} {how} the source {str(source)!r:.200}; "
                               "choose a folder apart from it", path if path is not None else str(target))


def _shape_text(shape: tuple[int | None, ...]) -> str:
    return "[" + ", ".join("n" if n is None else str(n) for n in shape) + "]"


def _dtype_text(dtype: np.dtype) -> str:
    return dtype.name if dtype.isnative else f"{dtype.name} ({dtype.str}, not this machine's byte order)"


def read_npy(path: str | os.PathLike, field: str, dtype: Any, shape: tuple[int | None, ...],
             finite: bool = True) -> np.ndarray:
    """The array in the ``.npy`` file ``path``, refused with a :class:`DataError` at ``path`` under
    ``field`` unless its header gives ``dtype`` and ``shape`` (``None``: any length on that axis)
    and the file holds exactly those bytes, both checked before any data is read; with
    ``finite``, every value must be finite too (:func:`check_finite`)."""
    path, want = Path(path), np.dtype(dtype)
    if path.is_dir():
        raise DataError(field, "is a folder, expected a .npy file", str(path))
    if not path.exists():
        raise DataError(field, "missing", str(path))
    if not path.is_file():
        raise DataError(field, "is not a regular file", str(path))
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            if version not in ((1, 0), (2, 0)):
                raise DataError(field, f"unsupported .npy format version {version}", str(path))
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            got_shape, _, got_dtype = read_header(f)
            if (got_dtype != want or len(got_shape) != len(shape)
                    or any(w is not None and g != w for g, w in zip(got_shape, shape))):
                raise DataError(field, f"expected {want.name} {_shape_text(shape)}, "
                                       f"got {_dtype_text(got_dtype)} {list(got_shape)}", str(path))
            size = os.fstat(f.fileno()).st_size - f.tell()
            if size != math.prod(got_shape) * want.itemsize:
                raise DataError(field, f"holds {size} bytes of data, its header promises "
                                       f"{math.prod(got_shape) * want.itemsize}", str(path))
            f.seek(0)
            array = np.lib.format.read_array(f, allow_pickle=False)
    except DataError:
        raise
    except (ValueError, EOFError, OSError) as err:
        raise DataError(field, f"not a readable .npy array: {str(err)[:120]}", str(path)) from None
    return check_finite(array, field, str(path)) if finite else array


# ============================================================================= safetensors
SAFETENSORS_FLOAT32 = frozenset({"F32", "F64"})
"""The dtypes a float32 model's weights may be stored in: its own, or wider (read back exactly)."""


def safetensors_header(path: str | os.PathLike, field: str = "weights") -> dict[str, tuple[str, tuple[int, ...]]]:
    """``name -> (dtype code, shape)`` of every tensor of the safetensors file ``path``, from its header
    alone (parsed and checked against the file's size by the format's reader: a cut-short file is
    refused); anything unreadable is a :class:`DataError` at ``path`` under ``field``, never a
    ``SafetensorError``."""
    path = Path(path)
    if not path.is_file():
        raise DataError(field, "missing or not a regular file", str(path))
    try:
        with safe_open(str(path), framework="numpy") as f:
            return {name: (f.get_slice(name).get_dtype(), tuple(f.get_slice(name).get_shape())) for name in f.keys()}
    except (SafetensorError, OSError, ValueError) as err:
        raise DataError(field, f"not a readable safetensors file: {str(err)[:120]}", str(path)) from None


def check_safetensors(path: str | os.PathLike, shapes: Mapping[str, tuple[int, ...]],
                      dtypes: frozenset[str] = SAFETENSORS_FLOAT32, field: str = "weights") -> None:
    """Refuse (a :class:`DataError` at ``path``) a safetensors file that is unreadable, cut short or
    not exactly the tensors ``shapes`` names, each in its shape and one of ``dtypes`` (the file's
    codes: ``F32``, ``I64``, ...). Only the header is read: nothing is allocated for a wrong file.
    ``field`` names an unreadable file; a wrong tensor is named by its own name."""
    path = Path(path)
    found = safetensors_header(path, field)
    for name in sorted(shapes.keys() | found.keys()):
        if name not in found:
            raise DataError(name, "missing (the config describes it)", str(path))
        if name not in shapes:
            raise DataError(name, "not a weight of the model its config describes", str(path))
        dtype, shape = found[name]
        if shape != tuple(shapes[name]):
            raise DataError(name, f"has shape {list(shape)}, the config makes it {list(shapes[name])}", str(path))
        if dtype not in dtypes:
            raise DataError(name, f"has dtype {dtype!r:.20}, expected one of {sorted(dtypes)}", str(path))

"""Bad cache entries, each with its exact outcome: no cache runs code on load, and an entry that is
not exactly what this code wrote for its key is recomputed and written over, never used, never waited on.

* the chunk cache (``core.resume``): a planted pickle that would run code; one-byte flips at every
  byte of a real entry; cut short, another key's entry, a reshaped array, a FIFO, a link to
  ``/dev/zero``; results of types the cache does not encode are not kept (a warning); the values
  of the actor tasks' results (step records, step hits, traces) come back equal, type for type;
* the embedding cache: vectors zeroed, negated, scaled by 1e30 or made NaN, in place (a broken
  digest) or sealed again with a valid digest (the value checks); every byte flipped;
* the OCR cache: planted text (a broken digest, or well formed but boxes outside [0, 1], text that
  is not a string or too long) is read again by the engine, never turned into elements;
* OCR on screens of extreme shape (1 x 40000, 40000 x 1): a DataError naming the screenshot.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from PIL import Image

from bad_inputs.corpus import error
from guimem.core.data import Action
from guimem.core.executor import LocalExecutor
from guimem.core.resume import (
    CHUNK_KIND,
    ChunkCache,
    cached_map,
    chunk_key,
    read_entry,
    seal_entry,
)
from guimem.eval.closed_loop import LoopStats, Trace, TraceStep
from guimem.eval.step_table import StepHits
from guimem.models.embedding import EMBEDDING_KIND, CachedImageEmbedder, EmbeddingCache, PixelEmbedder
from guimem.real.ocr import OCR_KIND, OcrLine, OcrReader
from guimem.routing.records import StepRecords

pytestmark = pytest.mark.bad_input


def within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()``, failing the test if it has not returned within ``seconds`` (a FIFO read would block)."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as err:  # noqa: BLE001 - re-raised in the test's thread
            out["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s (waiting on a FIFO?)"
    if "error" in out:
        raise out["error"]
    return out["value"]


# ============================================================================= the chunk cache
def records() -> StepRecords:
    """Step records as 06's chunks hold them: rows, nested dicts of arrays, hidden states, meta."""
    rng = np.random.default_rng(0)
    return StepRecords(
        rows=[{"episode_id": "e1", "step": 0, "memory_kind": None, "groups": ("tap", "text"), "n_elements": 3,
               "goal": "open ✓ settings", "hits": {"aitw": {"none": True}}}],
        hits={"aitw": {"none": np.array([True]), "text": np.array([False])}},
        sampled={"aitw": {"text": np.array([0.25]), "image": np.array([np.nan])}},
        hidden={c: rng.standard_normal((1, 3, 4)).astype(np.float32) for c in ("none", "text", "image")},
        candidates={"text": np.asfortranarray(rng.standard_normal((1, 4)).astype(np.float32))},
        meta={"n_samples": 8, "temperature": 1.0, "seed": np.int64(5), "big": 2**70, "neg_zero": -0.0,
              "inf": float("inf")})


def traces() -> tuple[list[Trace], LoopStats]:
    step = TraceStep("k" * 16, Action("tap", (0.25, 0.5)), ("m1", "m2"), "text")
    return [Trace("e1", "smg", "text", 3, 0, "goal", (step, TraceStep("k2", Action("done"), ())), "done", True)], \
        LoopStats(steps=2, actor_inputs=2)


class Task:
    """Returns a fixed value for every chunk, counting the chunks it ran."""

    def __init__(self, value: Any, types: tuple[type, ...] = ()):
        self.value, self.result_types, self.ran = value, types, 0

    def fingerprint(self) -> str:
        return f"fixed|{type(self.value).__name__}"

    def setup(self) -> None:
        return None

    def run(self, _: None, chunk: Any) -> Any:
        self.ran += 1
        return self.value


def kept(tmp_path: Path, value: Any, types: tuple[type, ...] = ()) -> tuple[Task, ChunkCache, Path]:
    """A task, the cache it stored its one chunk's result in, and that entry's file."""
    task, cache = Task(value, types), ChunkCache(tmp_path / "chunks")
    list(cached_map(LocalExecutor(), task, ["chunk"], cache))
    (path,) = (tmp_path / "chunks").rglob("*.chunk")
    return task, cache, path


def same(a: Any, b: Any) -> None:
    """``a`` and ``b`` equal value for value and type for type (arrays: dtype, shape, memory order, bits)."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.flags.f_contiguous == b.flags.f_contiguous
        assert a.tobytes() == b.tobytes() and a.flags.writeable
    elif isinstance(a, np.generic):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    elif isinstance(a, float):
        assert repr(a) == repr(b)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same(a[k], b[k])
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            same(getattr(a, f.name), getattr(b, f.name))
    else:
        assert a == b


RESULTS = [
    ("step_records", records, (StepRecords,)),
    ("step_hits", lambda: {"text": StepHits("text", np.arange(3), np.ones(3, bool), np.zeros(3, bool))}, (StepHits,)),
    ("traces", traces, (Trace, TraceStep, Action, LoopStats)),
    ("plain", lambda: (1, 2.5, "x", None, [True, {"a": (1,)}], {3: "int key"}, np.float32(0.5), np.bool_(True)), ()),
]


@pytest.mark.parametrize("name, make, types", RESULTS, ids=[r[0] for r in RESULTS])
def test_results_come_back_type_for_type(tmp_path, name, make, types):
    task, _, _ = kept(tmp_path, make(), types)
    again = Task(make(), types)
    (value,) = cached_map(LocalExecutor(), again, ["chunk"], ChunkCache(tmp_path / "chunks"))
    assert again.ran == 0
    same(value, make())


def test_a_planted_pickle_is_never_run_and_is_recomputed(tmp_path):
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    task = Task(42)
    key = chunk_key(task.fingerprint(), "chunk")
    cache = ChunkCache(tmp_path / "chunks")
    planted = [cache._path(key), cache._path(key).with_suffix(".pkl")]  # today's name and the one before
    for path in planted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(Exploit()))
    assert list(cached_map(LocalExecutor(), task, ["chunk"], cache)) == [42] and task.ran == 1
    assert not marker.exists()
    assert read_entry(planted[0], CHUNK_KIND, key, 1 << 20) is not None  # written over with a verified entry


def test_every_one_byte_flip_of_an_entry_is_detected(tmp_path):
    _, _, path = kept(tmp_path, records(), (StepRecords,))
    good = path.read_bytes()
    changed = []
    for i in range(len(good)):
        flipped = bytearray(good)
        flipped[i] ^= 0x01 << (i % 8)
        path.write_bytes(bytes(flipped))
        if ChunkCache(tmp_path / "chunks").get(path.stem, (StepRecords,)) is not _missing():
            changed.append(i)
    assert changed == [] and len(good) > 500


def _missing() -> Any:
    from guimem.core.resume import _MISSING
    return _MISSING


def reshaped(path: Path) -> None:
    """A well-sealed entry whose array spec no longer matches its bytes (one axis doubled)."""
    header, payload = read_entry(path, CHUNK_KIND, path.stem, 1 << 30)
    header["arrays"][0]["shape"] = [2 * n for n in header["arrays"][0]["shape"]]
    path.write_bytes(seal_entry(CHUNK_KIND, path.stem, header, payload))


def foreign_key(path: Path) -> None:
    """Another key's (valid) entry copied under this key's name."""
    other = ChunkCache(path.parent.parent)
    other.put("f" * 40, np.zeros(3))
    path.write_bytes(other._path("f" * 40).read_bytes())


def fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def to_dev_zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def link_to_good_copy(path: Path) -> None:
    """A link to a copy of the entry itself: even a good entry is read only as a regular file."""
    copy = path.parent / "copy"
    copy.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(copy)


def object_array(path: Path) -> None:
    header, payload = read_entry(path, CHUNK_KIND, path.stem, 1 << 30)
    header["arrays"][0]["dtype"] = "|O"
    path.write_bytes(seal_entry(CHUNK_KIND, path.stem, header, payload))


def unknown_class(path: Path) -> None:
    header, payload = read_entry(path, CHUNK_KIND, path.stem, 1 << 30)
    header["value"]["n"] = "os._wrap_close"
    path.write_bytes(seal_entry(CHUNK_KIND, path.stem, header, payload))


BROKEN = [
    ("truncated", lambda p: p.write_bytes(p.read_bytes()[:-7])),
    ("empty", lambda p: p.write_bytes(b"")),
    ("a_byte_more", lambda p: p.write_bytes(p.read_bytes() + b"\0")),
    ("reshaped", reshaped),
    ("foreign_key", foreign_key),
    ("object_dtype", object_array),
    ("unknown_class", unknown_class),
    ("fifo", fifo),
    ("link_to_dev_zero", to_dev_zero),
    ("link_to_a_good_copy", link_to_good_copy),
]


@pytest.mark.parametrize("case, mutate", BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_chunk_entry_is_recomputed_without_waiting(tmp_path, case, mutate):
    value = records()
    _, _, path = kept(tmp_path, value, (StepRecords,))
    mutate(path)
    again = Task(value, (StepRecords,))
    (got,) = within(10, lambda: list(cached_map(LocalExecutor(), again, ["chunk"], ChunkCache(tmp_path / "chunks"))))
    assert again.ran == 1
    same(got, value)
    assert path.is_file() and not path.is_symlink()  # written over with a regular, verified entry
    assert ChunkCache(tmp_path / "chunks").get(path.stem, (StepRecords,)) is not _missing()


def test_a_result_of_a_type_the_cache_does_not_encode_is_not_kept(tmp_path):
    task = Task(records())  # StepRecords not declared in result_types
    with pytest.warns(UserWarning, match="not kept"):
        list(cached_map(LocalExecutor(), task, ["a", "b"], ChunkCache(tmp_path / "chunks")))
    assert not list((tmp_path / "chunks").rglob("*.chunk"))
    with pytest.warns(UserWarning, match="not kept"):  # a chunk holding a type without a canonical encoding
        assert list(cached_map(LocalExecutor(), Task(1), [object()], ChunkCache(tmp_path / "chunks"))) == [1]


def test_chunk_keys_follow_values_not_pickles():
    image = Image.new("RGB", (4, 4), "red")
    assert chunk_key("f", [image, 1]) == chunk_key("f", [Image.new("RGB", (4, 4), "red"), 1])
    assert chunk_key("f", [image]) != chunk_key("f", [Image.new("RGB", (4, 4), "blue")])
    assert chunk_key("f", (1,)) != chunk_key("f", [1]) != chunk_key("f", [1.0]) != chunk_key("f", [True])
    assert chunk_key("f", [0.0]) != chunk_key("f", [-0.0]) and chunk_key("f", ["ab", "c"]) != chunk_key("f", ["a", "bc"])
    assert chunk_key("f", np.zeros(2, np.float32)) != chunk_key("f", np.zeros(2, np.float64))


# ============================================================================= the embedding cache
def vector_entry(tmp_path: Path) -> tuple[Path, np.ndarray]:
    image = Image.new("RGB", (18, 36), "red")
    good = CachedImageEmbedder(PixelEmbedder(), EmbeddingCache(tmp_path / "cache")).embed([image])[0]
    (path,) = (tmp_path / "cache").rglob("*.vec")
    return path, good


def in_place(change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    """The vector's bytes changed in the file, its digest left as it was."""
    def write(path: Path) -> None:
        data = path.read_bytes()
        n = 4 * PixelEmbedder().dim
        v = np.frombuffer(data[-n:], "<f4").copy()
        path.write_bytes(data[:-n] + change(v).astype("<f4").tobytes())
    return write


def resealed(change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    """The vector changed and the entry sealed again with a valid digest: only the value checks see it."""
    def write(path: Path) -> None:
        header, payload = read_entry(path, EMBEDDING_KIND, path.stem, 1 << 20)
        v = change(np.frombuffer(payload, "<f4").copy()).astype("<f4")
        path.write_bytes(seal_entry(EMBEDDING_KIND, path.stem, header, v.tobytes()))
    return write


VECTORS = [
    ("zeroed", in_place(lambda v: v * 0)),
    ("negated", in_place(lambda v: -v)),
    ("times_1e30", in_place(lambda v: v * np.float32(1e30))),
    ("nan", in_place(lambda v: v + np.nan)),
    ("zeroed_resealed", resealed(lambda v: v * 0)),
    ("times_1e30_resealed", resealed(lambda v: v * np.float32(1e30))),
    ("halved_resealed", resealed(lambda v: v / 2)),
    ("nan_resealed", resealed(lambda v: np.where(np.arange(len(v)) == 3, np.nan, v))),
    ("inf_resealed", resealed(lambda v: np.where(np.arange(len(v)) == 0, np.inf, v))),
    ("fifo", fifo),
    ("link_to_dev_zero", to_dev_zero),
]


@pytest.mark.parametrize("case, mutate", VECTORS, ids=[v[0] for v in VECTORS])
def test_a_planted_or_broken_vector_is_recomputed(tmp_path, case, mutate):
    path, good = vector_entry(tmp_path)
    mutate(path)
    again = CachedImageEmbedder(PixelEmbedder(), EmbeddingCache(tmp_path / "cache"))
    got = within(10, lambda: again.embed([Image.new("RGB", (18, 36), "red")]))
    np.testing.assert_array_equal(got[0], good)
    assert EmbeddingCache(tmp_path / "cache").get(again.inner.name, path.stem, len(good)) is not None  # rewritten


def test_every_one_byte_flip_of_a_vector_entry_is_detected(tmp_path):
    path, good = vector_entry(tmp_path)
    data, cache = path.read_bytes(), EmbeddingCache(tmp_path / "cache")
    step = max(1, len(data) // 400)
    for i in range(0, len(data), step):
        flipped = bytearray(data)
        flipped[i] ^= 0x80 >> (i % 8)
        path.write_bytes(bytes(flipped))
        assert cache.get("pixels", path.stem, len(good)) is None, f"a flip at byte {i} was used"


# ============================================================================= the OCR cache
LINES = [OcrLine("Settings", (0.1, 0.5, 0.4, 0.55), 0.98)]


@pytest.fixture
def ocr_entry(tmp_path, monkeypatch) -> tuple[Path, Image.Image]:
    monkeypatch.setattr(OcrReader, "_run", lambda self, image: list(LINES))
    image = Image.new("RGB", (20, 40), "white")
    assert OcrReader(cache_dir=tmp_path).lines(image) == LINES
    (path,) = tmp_path.rglob("*.entry")
    return path, image


def planted(lines: Any, reseal: bool = True) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        header, _ = read_entry(path, OCR_KIND, path.stem, 1 << 20)
        if reseal:
            path.write_bytes(seal_entry(OCR_KIND, path.stem, {**header, "lines": lines}))
        else:  # the text edited in the file, the digest left as it was
            path.write_bytes(path.read_bytes().replace(b"Settings", b"Pwned!!!"))
    return write


def line(**change: Any) -> list[dict[str, Any]]:
    return [{"text": "Pay now", "bounds": [0.1, 0.5, 0.4, 0.55], "score": 0.99, **change}]


OCR = [
    ("edited_text", planted(None, reseal=False)),
    ("box_outside", planted(line(bounds=[-0.5, 0.5, 1.5, 0.55]))),
    ("box_inverted", planted(line(bounds=[0.4, 0.5, 0.1, 0.55]))),
    ("box_three_corners", planted(line(bounds=[0.1, 0.5, 0.4]))),
    ("text_a_number", planted(line(text=12))),
    ("text_too_long", planted(line(text="x" * 100_000))),
    ("score_a_string", planted(line(score="0.9"))),
    ("score_above_one", planted(line(score=7))),
    ("extra_field", planted(line(clickable=True))),
    ("not_a_list", planted({"text": "Pay now"})),
    ("fifo", fifo),
    ("link_to_dev_zero", to_dev_zero),
]


@pytest.mark.parametrize("case, mutate", OCR, ids=[o[0] for o in OCR])
def test_planted_ocr_text_never_becomes_elements(ocr_entry, tmp_path, case, mutate):
    path, image = ocr_entry
    mutate(path)
    elements = within(10, lambda: OcrReader(cache_dir=tmp_path).elements(image))
    assert [e.text for e in elements] == ["Settings"]  # read again by the engine
    assert read_entry(path, OCR_KIND, path.stem, 1 << 20)[0]["lines"][0]["text"] == "Settings"  # written over


@pytest.mark.parametrize("size", [(1, 40000), (40000, 1), (9, 80)])
def test_ocr_on_a_screen_of_extreme_shape_is_a_data_error(size, tmp_path):
    file = tmp_path / "screenshot_1.png"
    Image.new("RGB", size, "white").save(file)
    with Image.open(file) as image:
        err = error(lambda: OcrReader(cache_dir=tmp_path).elements(image))
    assert (err.field, err.path) == ("screenshot", str(file)) and "too narrow" in err.message
    err = error(lambda: OcrReader(cache_dir=None).elements(Image.new("RGB", size), where="shot.png"))
    assert err.path == "shot.png"


def test_an_engine_failure_is_a_data_error_naming_the_screenshot(monkeypatch):
    class Engine:
        def __call__(self, array):
            raise RuntimeError("inside the engine")

    reader = OcrReader(cache_dir=None)
    reader._engine = Engine()
    err = error(lambda: reader.elements(Image.new("RGB", (20, 40)), where="shot.png"))
    assert (err.field, err.path) == ("screenshot", "shot.png") and "RuntimeError" in err.message


# ============================================================================= the converted-model cache
class Saver:
    """Stands for a model or tokenizer: ``save_pretrained`` writes one file."""

    def __init__(self, name: str, data: bytes = b"{}"):
        self.name, self.data = name, data

    def save_pretrained(self, folder: Path) -> None:
        (folder / self.name).write_bytes(self.data)


def planted_checkpoint(folder: Path) -> None:
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"weights": 1}))


def flipped_weight(folder: Path) -> None:
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[5] ^= 1
    (folder / "model.safetensors").write_bytes(bytes(data))


def weights_linked(folder: Path) -> None:
    copy = folder.parent / "elsewhere.safetensors"
    copy.write_bytes((folder / "model.safetensors").read_bytes())
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").symlink_to(copy)


def code_beside(folder: Path) -> None:
    (folder / "modeling_evil.py").write_text("import os; os.system('touch ran')\n")


def no_list(folder: Path) -> None:
    from guimem.models.llm import CACHE_FILES
    (folder / CACHE_FILES).unlink()  # a copy cached before the list existed: converted again once


def list_a_fifo(folder: Path) -> None:
    from guimem.models.llm import CACHE_FILES
    (folder / CACHE_FILES).unlink()
    os.mkfifo(folder / CACHE_FILES)


LLM = [("pickled_checkpoint_planted", planted_checkpoint), ("weight_byte_flipped", flipped_weight),
       ("weights_a_link", weights_linked), ("code_beside", code_beside), ("no_file_list", no_list),
       ("file_list_a_fifo", list_a_fifo)]


@pytest.mark.parametrize("case, mutate", LLM, ids=[c[0] for c in LLM])
def test_a_converted_model_copy_not_as_written_is_not_read(tmp_path, case, mutate):
    from guimem.models.llm import _cached, _write_cache

    folder = tmp_path / "SmolLM2-abc"
    _write_cache(folder, Saver("tokenizer.json"), Saver("model.safetensors", bytes(range(256)) * 4))
    assert _cached(folder) == folder
    mutate(folder)
    assert within(10, lambda: _cached(folder)) is None  # load_llm then converts the GGUF file again
    _write_cache(folder, Saver("tokenizer.json"), Saver("model.safetensors", bytes(range(256)) * 4))  # written over
    assert _cached(folder) == folder

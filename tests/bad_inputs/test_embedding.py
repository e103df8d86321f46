"""Bad input to the embedders, each case with its exact outcome.

* screenshot paths given to ``embed_screenshots`` (absolute, ``..``, links out of the store, not a
  file, not an image), with and without the cache: refused before anything is read outside the store;
* embedding-cache entries: one that is not a finite unit ``[dim]`` float32 vector (even when sealed
  with a valid digest), cut short, or not a file is computed again and rewritten (a folder in the
  way: computed, not stored); an embedder that returns NaN or the wrong shape is refused (more
  corrupt entries in ``test_caches.py``);
* a saved screen projection with one file broken, and projections built in code;
* vocabulary files of the miniature actor.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from PIL import Image

from bad_inputs.corpus import error
from guimem.core.resume import read_entry, seal_entry
from guimem.models.embedding import (
    EMBEDDING_KIND,
    CachedImageEmbedder,
    EmbeddingCache,
    PixelEmbedder,
    ProjectedImageEmbedder,
    embed_screenshots,
    fit_projection,
)
from guimem.models.tokenizer import Vocabulary

pytestmark = pytest.mark.bad_input


@pytest.fixture
def store(tmp_path) -> Path:
    """``tmp_path/store/screens/{a,b}.png``, and ``tmp_path/secret.png`` and ``tmp_path/private/`` outside it."""
    root = tmp_path / "store"
    (root / "screens").mkdir(parents=True)
    for name, colour in (("a", "red"), ("b", "blue")):
        Image.new("RGB", (18, 36), colour).save(root / "screens" / f"{name}.png")
    Image.new("RGB", (18, 36), "black").save(tmp_path / "secret.png")
    (tmp_path / "private").mkdir()
    Image.new("RGB", (18, 36), "white").save(tmp_path / "private" / "c.png")
    return root


def link(rel: str, to: str, asked: str | None = None) -> Callable[[Path], str]:
    """Make ``rel`` in the store a symbolic link to ``to`` (relative to the store's parent; absolute
    stays absolute); the path asked for is ``asked`` (default ``rel``)."""
    def make(root: Path) -> str:
        (root / rel).symlink_to(root.parent / to)
        return asked or rel
    return make


def bytes_file(rel: str, data: bytes) -> Callable[[Path], str]:
    def make(root: Path) -> str:
        (root / rel).write_bytes(data)
        return rel
    return make


def given(rel: Any) -> Callable[[Path], Any]:
    return lambda root: rel


# (case id, the path asked for (made in the store), field, file named: relative to the store, "." = the store)
SCREENSHOTS: list[tuple[str, Callable[[Path], Any], str, str]] = [
    ("absolute", given("/etc/passwd"), "screenshot", "."),
    ("up_and_out", given("../secret.png"), "screenshot", "."),
    ("up_and_out_inside_a_path", given("screens/../../secret.png"), "screenshot", "."),
    ("empty", given(""), "screenshot", "."),
    ("none", given(None), "screenshot", "."),
    ("a_number", given(7), "screenshot", "."),
    ("nul_byte", given("screens/a\x00.png"), "screenshot", "."),
    ("link_to_a_file_outside", link("screens/s.png", "secret.png"), "screenshot", "."),
    ("link_to_a_folder_outside", link("screens/p", "private", asked="screens/p/c.png"), "screenshot", "."),
    ("link_to_a_system_file", link("screens/x.png", "/etc/hostname"), "screenshot", "."),
    ("missing", given("screens/none.png"), "screenshot", "screens/none.png"),
    ("a_folder", given("screens"), "screenshot", "screens"),
    ("not_an_image", bytes_file("screens/t.png", b"just text"), "screenshot", "screens/t.png"),
    ("truncated_png", bytes_file("screens/t.png", b"\x89PNG\r\n\x1a\n\x00\x00"), "screenshot", "screens/t.png"),
]


@pytest.mark.parametrize("cached", [False, True], ids=["plain", "cached"])
@pytest.mark.parametrize("case, make, field, file", SCREENSHOTS, ids=[c[0] for c in SCREENSHOTS])
def test_a_screenshot_outside_the_store_is_never_read(store, tmp_path, cached, case, make, field, file):
    embedder = CachedImageEmbedder(PixelEmbedder(), EmbeddingCache(tmp_path / "cache")) if cached else PixelEmbedder()
    rel = make(store)
    err = error(lambda: embed_screenshots(embedder, store, ["screens/a.png", rel]))
    assert (err.field, os.path.relpath(err.path, store)) == (field, file), str(err)
    assert not list((tmp_path / "cache").rglob("*.vec"))  # refused before anything was embedded


def test_a_link_inside_the_store_is_followed(store):
    (store / "screens" / "alias.png").symlink_to(store / "screens" / "a.png")
    vectors = embed_screenshots(PixelEmbedder(), store, ["screens/alias.png", "screens/a.png"])
    np.testing.assert_array_equal(vectors["screens/alias.png"], vectors["screens/a.png"])


# ============================================================================= the cache
def entry(tmp_path: Path) -> Path:
    """The one cache entry of screen ``a``, after it was cached."""
    CachedImageEmbedder(PixelEmbedder(), EmbeddingCache(tmp_path / "cache")).embed([Image.new("RGB", (18, 36), "red")])
    (path,) = (tmp_path / "cache").rglob("*.vec")
    return path


def vector_of(path: Path) -> np.ndarray:
    """The vector a cache entry holds (its digest and header checked)."""
    entry = read_entry(path, EMBEDDING_KIND, path.stem, 1 << 20)
    assert entry is not None, "not a verified entry"
    return np.frombuffer(entry[1], "<f4").copy()


def saved(value: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    """The entry sealed again, with a valid digest, around ``value(vector)`` (its header saying what it holds)."""
    def write(path: Path) -> None:
        header, _ = read_entry(path, EMBEDDING_KIND, path.stem, 1 << 20)
        v = np.asarray(value(vector_of(path)))
        header = {**header, "shape": list(v.shape), "dtype": v.dtype.str}
        path.write_bytes(seal_entry(EMBEDDING_KIND, path.stem, header, v.tobytes()))
    return write


def at(index: int, value: float) -> Callable[[np.ndarray], np.ndarray]:
    def change(x: np.ndarray) -> np.ndarray:
        x[index] = value
        return x
    return change


def folder_instead(path: Path) -> None:
    path.unlink()
    path.mkdir()


# (case id, mutation of the entry, outcome: "repaired" (recomputed and rewritten), or "not stored")
CACHE: list[tuple[str, Callable[[Path], None], str]] = [
    ("inf", saved(at(3, np.inf)), "repaired"),
    ("minus_inf", saved(at(0, -np.inf)), "repaired"),
    ("nan", saved(at(5, np.nan)), "repaired"),
    ("a_folder", folder_instead, "not stored"),
    ("truncated", lambda p: p.write_bytes(p.read_bytes()[:-10]), "repaired"),
    ("not_an_entry", lambda p: p.write_bytes(b"not an array"), "repaired"),
    ("empty", lambda p: p.write_bytes(b""), "repaired"),
    ("one_longer", saved(lambda x: np.append(x, 0.0).astype(np.float32)), "repaired"),
    ("float64", saved(lambda x: x.astype(np.float64)), "repaired"),
    ("a_matrix", saved(lambda x: x[None]), "repaired"),
]


@pytest.mark.parametrize("case, mutate, outcome", CACHE, ids=[c[0] for c in CACHE])
def test_a_broken_cache_entry_is_recomputed(tmp_path, case, mutate, outcome):
    path = entry(tmp_path)
    good = vector_of(path)
    mutate(path)
    again = CachedImageEmbedder(PixelEmbedder(), EmbeddingCache(tmp_path / "cache"))
    image = Image.new("RGB", (18, 36), "red")
    if outcome == "repaired":
        np.testing.assert_array_equal(again.embed([image])[0], good)
        np.testing.assert_array_equal(vector_of(path), good)  # rewritten
    else:
        with pytest.warns(RuntimeWarning, match="not cached"):
            np.testing.assert_array_equal(again.embed([image])[0], good)
        assert path.is_dir()  # a folder guimem did not write is left alone


class Broken:
    """An embedder whose output is bad: NaN rows, or one row too few."""

    def __init__(self, how: str):
        self.how, self.name, self.dim = how, f"broken-{how}", 4

    def embed(self, images: list) -> np.ndarray:
        if self.how == "nan":
            return np.full((len(images), 4), np.nan, np.float32)
        return np.ones((len(images) - 1, 4), np.float32)


@pytest.mark.parametrize("how", ["nan", "short"])
def test_an_embedder_with_bad_output_is_refused_and_nothing_cached(tmp_path, how):
    cache = EmbeddingCache(tmp_path / "cache")
    err = error(lambda: CachedImageEmbedder(Broken(how), cache).embed([Image.new("RGB", (4, 4))] * 2))
    assert err.field == "embedding" and not (tmp_path / "cache").exists()


# ============================================================================= the projection
@pytest.fixture
def projection(tmp_path) -> tuple[Path, PixelEmbedder]:
    inner = PixelEmbedder(4, 8)
    images = [Image.new("RGB", (18, 36), (40 * i, 255 - 30 * i, 17 * i)) for i in range(8)]
    fit_projection(inner, inner.embed(images), rank=3).save(tmp_path / "projection")
    return tmp_path / "projection", inner


def meta(**values: Any) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        m = json.loads((folder / "projection.json").read_text())
        m.update(values)
        (folder / "projection.json").write_text(json.dumps(m))
    return mutate


def basis(change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    return lambda folder: np.save(folder / "basis.npy", change(np.load(folder / "basis.npy").copy()))


def flip_first_row(b: np.ndarray) -> np.ndarray:
    b[0] = -b[0]
    return b


def link_out(name: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        shutil.move(folder / name, folder.parent / name)
        (folder / name).symlink_to(folder.parent / name)
    return mutate


# (case id, mutation of the saved projection, field, file)
PROJECTIONS: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("meta_missing", lambda f: (f / "projection.json").unlink(), "file", "projection.json"),
    ("meta_malformed", lambda f: (f / "projection.json").write_text("{"), "json", "projection.json"),
    ("meta_a_list", lambda f: (f / "projection.json").write_text("[]"), "projection", "projection.json"),
    ("fitted_on_another_embedder", meta(inner="pixels"), "inner", "projection.json"),
    ("inner_dim_wrong", meta(inner_dim=7), "inner_dim", "projection.json"),
    ("rank_zero", meta(rank=0), "rank", "projection.json"),
    ("rank_beyond_the_inner_dim", meta(rank=97), "rank", "projection.json"),
    ("rank_a_string", meta(rank="3"), "rank", "projection.json"),
    ("rank_not_the_basis", meta(rank=2), "basis", "basis.npy"),
    ("basis_missing", lambda f: (f / "basis.npy").unlink(), "basis", "basis.npy"),
    ("basis_float32", basis(lambda b: b.astype(np.float32)), "basis", "basis.npy"),
    ("basis_inf", basis(lambda b: np.where(b == b.flat[0], np.inf, b)), "basis", "basis.npy"),
    ("basis_not_orthonormal", basis(lambda b: 2 * b), "basis", "basis.npy"),
    ("basis_not_the_recorded_one", basis(flip_first_row), "name", "projection.json"),
    ("basis_truncated", lambda f: (f / "basis.npy").write_bytes((f / "basis.npy").read_bytes()[:200]), "basis",
     "basis.npy"),
    ("basis_link_out", link_out("basis.npy"), "file", "basis.npy"),
]


@pytest.mark.parametrize("case, mutate, field, file", PROJECTIONS, ids=[c[0] for c in PROJECTIONS])
def test_a_broken_saved_projection_names_file_and_field(projection, case, mutate, field, file):
    folder, inner = projection
    mutate(folder)
    err = error(lambda: ProjectedImageEmbedder.load(folder, inner))
    assert (err.field, os.path.relpath(err.path, folder)) == (field, file), str(err)


@pytest.mark.parametrize("case, matrix", [("nan", np.full((2, 96), np.nan)), ("zero_rows", np.zeros((0, 96))),
                                          ("wider_than_the_inner_dim", np.eye(97)[:, :96]),
                                          ("not_orthonormal", np.ones((2, 96)))])
def test_a_projection_in_code_refuses_a_bad_basis(case, matrix):
    assert error(lambda: ProjectedImageEmbedder(PixelEmbedder(4, 8), matrix)).field == "basis"


def test_no_projection_and_a_foreign_save_target(projection, tmp_path):
    folder, inner = projection
    assert error(lambda: ProjectedImageEmbedder.load(tmp_path / "none", inner)).path == str(tmp_path / "none")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("mine")
    err = error(lambda: ProjectedImageEmbedder.load(folder, inner).save(tmp_path / "notes"))
    assert (err.field, err.path) == ("path", str(tmp_path / "notes"))
    assert (tmp_path / "notes" / "a.txt").read_text() == "mine"


# ============================================================================= the vocabulary
GOOD_VOCAB = {"format": 1, "n_hash_buckets": 4, "tokens": ["[PAD]", "[ACT]", "open", "the"]}


def vocab_file(**values: Any) -> bytes:
    return json.dumps({**GOOD_VOCAB, **values}).encode()


# (case id, bytes of vocab.json, field)
VOCABS: list[tuple[str, bytes, str]] = [
    ("truncated", vocab_file()[:-9], "json"),
    ("empty", b"", "json"),
    ("not_utf8", b'{"format": 1, "tokens": ["\xff"]}', "file"),
    ("a_list", b"[]", "vocabulary"),
    ("format_newer", vocab_file(format=2), "format"),
    ("tokens_missing", vocab_file(tokens=None), "tokens"),
    ("tokens_with_a_number", vocab_file(tokens=["[PAD]", "[ACT]", 3]), "tokens"),
    ("specials_missing", vocab_file(tokens=["open", "the"]), "tokens"),
    ("a_token_twice", vocab_file(tokens=["[PAD]", "[ACT]", "open", "open"]), "tokens"),
    ("no_hash_buckets", vocab_file(n_hash_buckets=0), "n_hash_buckets"),
    ("hash_buckets_a_float", vocab_file(n_hash_buckets=4.0), "n_hash_buckets"),
    ("hash_buckets_of_5000_digits", vocab_file()[:-1] + b', "x": ' + b"9" * 5000 + b"}", "json"),
]


@pytest.mark.parametrize("case, data, field", VOCABS, ids=[c[0] for c in VOCABS])
def test_a_bad_vocabulary_file_names_its_field(tmp_path, case, data, field):
    (tmp_path / "vocab.json").write_bytes(data)
    err = error(lambda: Vocabulary.load(tmp_path / "vocab.json"))
    assert (err.field, err.path) == (field, str(tmp_path / "vocab.json")), str(err)


def test_no_vocabulary_file_or_a_folder_and_no_save_over_a_folder(tmp_path):
    assert error(lambda: Vocabulary.load(tmp_path / "none.json")).field == "file"
    (tmp_path / "v.json").mkdir()
    assert error(lambda: Vocabulary.load(tmp_path / "v.json")).field == "file"
    vocab = Vocabulary.from_dict(GOOD_VOCAB)
    err = error(lambda: vocab.save(tmp_path / "v.json"))
    assert (err.field, err.path) == ("path", str(tmp_path / "v.json"))

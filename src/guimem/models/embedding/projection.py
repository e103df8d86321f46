"""An image embedder followed by a fixed projection onto the top principal directions of training screens.

``<name>+pca<r>-<hash>``: the inner embedder's vectors projected onto the top ``r`` right
singular vectors of training screens' vectors (:func:`fit_projection`) and renormalised; the
hash is of the basis. Fewer dimensions make an exact similarity scan over many nodes cheaper
(1280-d float32 rows are 512 MB per 100k nodes; 64-d rows 26 MB). A projection is saved as a
folder of kind ``guimem.projection`` (``basis.npy``, ``projection.json``) and loaded only over
the embedder it was fitted on.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image

from guimem.core.data import DataError
from guimem.core.io import (
    atomic_write_dir,
    check_finite,
    check_number,
    file_inside,
    read_json,
    read_npy,
    read_whole,
    write_json,
)
from guimem.core.store import open_image
from guimem.models.embedding.embedders import ImageEmbedder, l2_normalize

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
        def read(folder: Path) -> "ProjectedImageEmbedder":
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
        return read_whole(folder, read, "saved projection")


def fit_projection(inner: ImageEmbedder, vectors: np.ndarray, rank: int) -> ProjectedImageEmbedder:
    """Project onto the top ``rank`` right singular vectors of ``vectors`` ``[n, inner.dim]`` (uncentred),
    found as the top eigenvectors of their ``[dim, dim]`` Gram matrix rather than by an SVD.

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

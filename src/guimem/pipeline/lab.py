"""JupyterLab's view of the stage notebooks: a script opens as a notebook with its kernel, and clean.

``make lab`` starts JupyterLab with :class:`LabContentsManager` (jupytext's contents manager, which
opens ``notebooks/NN_stage.py`` as a notebook and saves it back through ``jupytext.toml``). A script
carries no metadata (``notebook_metadata_filter = "-all"``), so jupytext gives an opened one the
kernel whose interpreter runs JupyterLab (``make lab`` writes that interpreter into the venv's
kernel spec). When that kernel starts, JupyterLab writes the kernel's ``language_info`` into the
notebook's metadata, and a notebook that lacked it is marked unsaved the moment it opens, though
nobody changed anything. JupyterLab writes nothing when the value is already there, deep-equal,
so :class:`LabContentsManager` serves a notebook whose kernel is this interpreter's with the
``language_info`` that kernel will report (:func:`kernel_language_info`). The metadata never
reaches the script: jupytext drops it on save.
"""

from __future__ import annotations

import copy
from typing import Any

from ipykernel.ipkernel import IPythonKernel
from jupytext.async_contentsmanager import AsyncTextFileContentsManager
from jupytext.kernels import kernelspec_from_language


def kernel_language_info() -> dict[str, Any]:
    """The ``language_info`` ipykernel reports in this interpreter (its kernel_info reply's)."""
    return copy.deepcopy(IPythonKernel.language_info)


def with_kernel_language(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` with ``language_info`` added where its kernel is this interpreter's and it has none."""
    spec = metadata.get("kernelspec")
    if "language_info" in metadata or not isinstance(spec, dict) or spec.get("language") != "python":
        return metadata
    try:
        ours = kernelspec_from_language("python")
    except Exception:  # noqa: BLE001 - no kernel spec, or a broken one: opening the file must not fail for this
        return metadata
    if spec.get("name") == ours["name"]:
        metadata["language_info"] = kernel_language_info()
    return metadata


class LabContentsManager(AsyncTextFileContentsManager):
    """jupytext's contents manager, serving notebooks with their kernel's ``language_info`` (see the module)."""

    async def get(self, path: str, content: bool = True, type: str | None = None, format: str | None = None,
                  **kwargs: Any) -> dict[str, Any]:
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
            with_kernel_language(model["content"].setdefault("metadata", {}))
        return model

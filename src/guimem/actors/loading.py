"""Choosing the frozen actor by name: the miniature actor, or any Hugging Face VLM on disk.

The pipeline names the actor by its folder (``closed_loop.actor.actor_model``): the pretrained
miniature committed in ``pretrained/actor`` (made by ``make pretrain``; known by the kind its save
stamped on the folder) or a
Hugging Face checkpoint folder; DVC then tracks whichever it is, so the pipeline needs a folder.
``"mini"`` with ``actor_dir`` names the miniature too (a spelling for code and tests), and outside
the pipeline a hub id already in the local cache names a Hugging Face VLM.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from guimem.actors.hf.parsing import DEFAULT_ANSWER_FORMAT, DEFAULT_COORDS, DEFAULT_MAX_NEW_TOKENS
from guimem.actors.hf.policy import HFVLMActor
from guimem.actors.mini.policy import ACTOR_KIND, MiniActor
from guimem.core.data import DataError
from guimem.core.io import folder_kind
from guimem.core.policy import Policy
from guimem.core.resume import tree_digest

MINI_ACTOR = "mini"
"""``actor_model`` value naming the miniature actor in ``actor_dir`` (a spelling for code and tests)."""
MINIATURE_FOLDER = "pretrained/actor"
"""Where ``make pretrain`` saves the miniature (committed): the default actor, named by its folder even
where it is missing (its load then says so)."""


def is_miniature(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a miniature actor saved by :meth:`MiniActor.save` (its folder's kind)."""
    return os.path.isdir(folder) and folder_kind(folder) == ACTOR_KIND


def names_miniature_folder(actor_model: object) -> bool:
    """Whether an ``actor_model`` value names the miniature by its folder: the committed one (even
    before it exists) or any folder holding a saved miniature."""
    return isinstance(actor_model, str) and (os.path.normpath(actor_model) == MINIATURE_FOLDER
                                             or is_miniature(actor_model))
DEFAULT_BATCH_SIZE = 64  # actor inputs per forward pass (fixed in a run: batch composition moves float noise)


def load_actor(actor_model: str, actor_dir: str | os.PathLike, batch_size: int = DEFAULT_BATCH_SIZE,
               coords: str = DEFAULT_COORDS, answer_format: str = DEFAULT_ANSWER_FORMAT,
               max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, device: str | None = None) -> Policy:
    """The frozen actor a closed-loop run plays with, chosen by ``actor_model`` (a params.yaml value).

    ``"mini"``: the miniature actor saved by ``make pretrain`` in ``actor_dir``; a folder holding a
    saved miniature: that one. Anything else is
    a Hugging Face vision-language model id or local folder, loaded by
    :class:`guimem.actors.hf.policy.HFVLMActor` from disk only (it must already be
    there), answering in ``answer_format`` with coordinates in the ``coords`` convention, on
    ``device`` (None: cuda if available).
    """
    if not isinstance(actor_model, str) or not actor_model.strip():
        raise DataError("actor_model", f"expected {MINI_ACTOR!r} or a Hugging Face model id / folder, got {actor_model!r}")
    if actor_model == MINI_ACTOR or is_miniature(actor_model):
        return MiniActor.load(actor_dir if actor_model == MINI_ACTOR else actor_model, batch_size=batch_size)
    return HFVLMActor(actor_model, coords=coords, answer_format=answer_format, max_new_tokens=max_new_tokens,
                      batch_size=batch_size, device=device)


@dataclass(frozen=True)
class ActorSpec:
    """:func:`load_actor`'s arguments as a value: it travels to worker processes and Ray actors
    (executor tasks carry it), and each process loads its actor once (:meth:`load`).

    Paths are made absolute, so a worker started elsewhere than this process's working directory
    finds them (on a cluster, at the same path on a shared file system). The device is decided
    here, in the process that describes the work, so that every worker runs the actor where this
    process would: a worker that cannot (no GPU visible) fails instead of running elsewhere.
    """

    actor_model: str = MINIATURE_FOLDER  # a folder (a saved miniature or a Hugging Face checkpoint), a cached hub id, or "mini"
    actor_dir: str = ""  # the miniature actor's folder (actor_model "mini")
    batch_size: int = DEFAULT_BATCH_SIZE  # inputs per forward pass
    coords: str = DEFAULT_COORDS  # a Hugging Face actor's coordinate convention (actors.hf.parsing.COORD_CONVENTIONS)
    answer_format: str = DEFAULT_ANSWER_FORMAT  # the format its system prompt asks for: json or uitars
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS  # a Hugging Face actor's answer budget in tokens
    torch_threads: int = 1  # CPU threads of a process that loads it (reproducible for a fixed count; 0: torch's own)
    device: str = ""  # a Hugging Face actor's device ("": cuda where this process sees one, else cpu)

    def __post_init__(self) -> None:
        if not isinstance(self.actor_model, str) or not self.actor_model.strip():
            raise DataError("actor_model", f"expected {MINI_ACTOR!r} or a Hugging Face model id / folder, "
                                           f"got {self.actor_model!r:.60}")
        if names_miniature_folder(self.actor_model):
            object.__setattr__(self, "actor_dir", self.actor_model)
            object.__setattr__(self, "actor_model", MINI_ACTOR)
        if self.actor_model == MINI_ACTOR:
            if not self.actor_dir:
                raise DataError("actor_dir", "the miniature actor needs the folder the actor stage saved it in")
            object.__setattr__(self, "actor_dir", os.path.abspath(self.actor_dir))
            object.__setattr__(self, "device", "cpu")  # the miniature runs on the CPU
            return
        if os.path.isdir(self.actor_model):  # a local folder, not a hub id
            object.__setattr__(self, "actor_model", os.path.abspath(self.actor_model))
        if not self.device:
            object.__setattr__(self, "device", "cuda" if torch.cuda.is_available() else "cpu")

    @property
    def miniature(self) -> bool:
        """Whether this is the miniature actor (it trains on the world's phones only)."""
        return self.actor_model == MINI_ACTOR

    def files(self) -> str | None:
        """The folder the actor's files are in: the miniature's, a local Hugging Face folder, or the
        local snapshot of a hub id (None when there is none on disk)."""
        if self.actor_model == MINI_ACTOR:
            return self.actor_dir
        if os.path.isdir(self.actor_model):
            return self.actor_model
        try:
            from huggingface_hub import snapshot_download

            return snapshot_download(self.actor_model, local_files_only=True)
        except (ImportError, OSError, ValueError):  # not in the local hub cache, or not a repository id
            return None

    def fingerprint(self) -> str | None:
        """A digest of the actor's files (:mod:`guimem.core.resume`): the miniature's folder read
        whole, a Hugging Face folder or snapshot by file sizes, inodes and times (weights are too
        large to read); None when its files are not on disk."""
        folder = self.files()
        if folder is None:
            return None
        return tree_digest(folder, contents=self.actor_model == MINI_ACTOR)

    def load(self) -> Policy:
        """The actor, loaded on the first call in this process; later calls return the same one
        while its files are unchanged (a stage rerun in a kernel after the actor was retrained
        loads the new one)."""
        digest = self.fingerprint()
        loaded = _LOADED.get(self)
        if loaded is None or loaded[0] != digest:
            if self.torch_threads:
                torch.set_num_threads(self.torch_threads)
            _LOADED[self] = (digest, load_actor(self.actor_model, self.actor_dir, self.batch_size, self.coords,
                                                self.answer_format, self.max_new_tokens, self.device))
        return _LOADED[self][1]


_LOADED: dict[ActorSpec, tuple[str | None, Policy]] = {}  # this process's loaded actors, with their files' digest


def check_reads_recorded(spec: ActorSpec, source: str) -> None:
    """Recorded steps (``source``: their store) need a Hugging Face VLM: the miniature actor is
    trained on the world's phones, their screens and UI trees, and knows nothing else (a DataError
    naming ``actor_model``)."""
    if spec.miniature:
        raise DataError("actor_model", "the miniature actor is trained on the world's phones and cannot read "
                                       "recorded steps: name a Hugging Face VLM checkpoint folder", source)


def describe_actor(actor: Policy, actor_model: str) -> str:
    """One line naming the actor a stage plays with: the miniature's size, or the model's id and depth."""
    if isinstance(actor, MiniActor):
        c = actor.config
        return f"the miniature actor: {c.num_hidden_layers} layers, d_model {c.hidden_size}"
    if isinstance(actor, HFVLMActor):
        return f"{actor_model}: {actor.n_layers} layers, d_model {actor.d_model}"
    return actor_model

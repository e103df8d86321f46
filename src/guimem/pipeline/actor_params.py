"""The stages' checks of the frozen actor they play: the ``actor`` group of 05, 06 and 09 (the fields of
:class:`~guimem.actors.loading.ActorSpec`), and what a saved miniature's own files say of it — its
shape (``config.json``: history length, width, layers) and its model card (``pretraining.json``: the
phones it was pretrained on). A Hugging Face actor, or a folder not made yet, is checked when it loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from guimem.actors.hf.parsing import ANSWER_FORMATS, COORD_CONVENTIONS
from guimem.actors.loading import MINI_ACTOR, ActorSpec, is_miniature, names_miniature_folder
from guimem.actors.mini.policy import CARD_JSON
from guimem.core.data import DataError
from guimem.core.io import read_json
from guimem.phone.config import WorldConfig
from guimem.pipeline.params import BATCH, THREADS, TOKENS, Group, Params, Text
from guimem.routing.probe import ProbeConfig

ACTOR = Group(ActorSpec, {"actor_model": Text(), "batch_size": BATCH, "torch_threads": THREADS,
                          "coords": Text(COORD_CONVENTIONS), "answer_format": Text(ANSWER_FORMATS),
                          "max_new_tokens": TOKENS})

def check_actor(p: Params) -> None:
    """05, 06 and 09: the ``actor`` group makes an ActorSpec; recorded episodes need a Hugging Face
    VLM (the miniature knows only the world's phones)."""
    p.build({f: f"actor.{f}" for f in ACTOR.fields}, ActorSpec, **p["actor"])
    if p.upstream("base", "episodes", Text()) == "recorded" and mini_actor(p):
        raise p.error("actor.actor_model", "the miniature actor is trained on the world's phones and cannot read "
                                           "recorded steps (base.episodes: recorded): name a Hugging Face VLM "
                                           "checkpoint folder")
    if "history_len" in p.values:
        check_history_len(p)
    check_pretrained_phones(p, _actor_model(p), "actor.actor_model")


def names_miniature(actor_model: Any) -> bool:
    """Whether an ``actor_model`` value names the miniature: ``"mini"``, the committed folder, or
    any folder holding a saved miniature."""
    return actor_model == MINI_ACTOR or names_miniature_folder(actor_model)


def _actor_model(p: Params) -> Any:
    """The ``actor_model`` 05-09 play: the stage's own ``actor`` group's, else 05's in the params file
    (a group without ``actor_model``: the default); None when neither says."""
    if "actor" in p.values:
        return p["actor"].get("actor_model", ActorSpec.actor_model)
    closed_loop = p.document.get("closed_loop")
    actor = closed_loop.get("actor") if isinstance(closed_loop, Mapping) else None
    if not isinstance(actor, Mapping):
        return None  # no params file, or one without 05's actor: unknown
    return actor.get("actor_model", ActorSpec.actor_model)


def mini_actor(p: Params) -> bool:
    """Whether the actor 05-09 run is the miniature (:func:`_actor_model`)."""
    return names_miniature(_actor_model(p))


def miniature_shape(p: Params) -> dict[str, Any] | None:
    """The shape (``config.json``) of the saved miniature 05-09 play, when the actor named is a folder
    holding one; None otherwise (a Hugging Face VLM, or a folder not made yet: its load says so)."""
    folder = _actor_model(p)
    if not isinstance(folder, str) or folder == MINI_ACTOR or not is_miniature(folder):
        return None
    path = Path(folder) / "config.json"
    try:
        raw = read_json(path)
    except DataError:
        return None  # the actor's own load names what is wrong with it
    return raw if isinstance(raw, dict) else None


def _shape_number(p: Params, key: str) -> int | None:
    """``key`` of :func:`miniature_shape`, a positive integer, or None."""
    shape = miniature_shape(p)
    value = shape.get(key) if shape else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def check_pretrained_phones(p: Params, folder: Any, field: str) -> None:
    """A pretrained miniature (its model card, ``pretraining.json``) never trained on one of the world's
    evaluation phones (``world.phone``): what it knows of them would pass for what memory taught it."""
    if not isinstance(folder, str) or not is_miniature(folder) or not isinstance(p.document, Mapping):
        return
    try:
        card = read_json(Path(folder) / CARD_JSON)
        world = p.document.get("world", {}).get("phone", {})
        evaluation = set(WorldConfig.from_dict(world).eval_variants) if isinstance(world, Mapping) else set()
    except (DataError, AttributeError):
        return  # no card (the actor's own check says so), or a world its stage refuses
    phones = card.get("corpus", {}).get("phones", []) if isinstance(card, dict) else []
    seen = sorted(evaluation & {v for v in phones if isinstance(v, int)})
    if seen:
        raise p.error(field, f"the actor in {folder} was pretrained on phones {phones}, among them the world's "
                             f"evaluation phone(s) {seen} (world.phone); pretrain it without them (pretrain.phones)")


def check_history_len(p: Params) -> None:
    """05, 06 and 09: a miniature is shown as many earlier actions as it was pretrained with."""
    shape = miniature_shape(p)
    if shape is not None and "max_history" in shape and p["history_len"] != shape["max_history"]:
        raise p.error("history_len", f"the miniature in {_actor_model(p)} was pretrained on {shape['max_history']} "
                                     f"earlier actions (its config.json: max_history), got {p['history_len']}")


def check_probe_dim(p: Params) -> None:
    """06 and 07: the probe's PCA is at most the actor's hidden size (the shift's dimensions)."""
    width = _shape_number(p, "hidden_size")
    pca_dim = p["probe"].get("pca_dim", ProbeConfig.pca_dim)
    if width is not None and pca_dim > width:
        raise p.error("probe.pca_dim", f"must be at most the actor's hidden size ({width}: its config.json's "
                                       f"hidden_size), got {pca_dim}")


def state_layers(p: Params) -> int | None:
    """The miniature's transformer blocks (its config.json's num_hidden_layers), or None."""
    return _shape_number(p, "num_hidden_layers")

"""Turning the miniature actor's heads back into actions: argmax decoding (:func:`decode`), and
drawing sampled actions from the heads' distributions (:func:`sample_decode`, SwitchMem's sampled
action preferences). A touch lands on the centre of the element the pointer chose; typed text is a
span of the goal (:func:`valid_spans`).
"""

from __future__ import annotations

from typing import Sequence

import torch

from guimem.actors.mini.config import DIRECTION_VECTORS, DIRECTIONS, ActorConfig
from guimem.actors.mini.features import Features
from guimem.actors.mini.model import ActorOutput
from guimem.core.data import ACTION_TYPES, Action, DataError
from guimem.models.tokenizer import span_text


def decode(out: ActorOutput, features: Sequence[Features], config: ActorConfig) -> list[Action]:
    """Argmax decoding of each head into one :class:`Action` per prompt; a touch lands on the centre
    of the element the pointer chose (the screen's centre on a screen without elements)."""
    types = out.type_logits.argmax(-1).tolist()
    pointed = out.pointer_logits.argmax(-1).tolist()
    directions = out.direction_logits.argmax(-1).tolist()
    apps = out.app_logits.argmax(-1).tolist()
    actions = []
    for i, f in enumerate(features):
        kind = ACTION_TYPES[types[i]]
        point = f.elements[pointed[i]].center if pointed[i] < len(f.elements) else (0.5, 0.5)
        point = (round(point[0], 4), round(point[1], 4))
        if kind in ("tap", "long_press"):
            actions.append(Action(kind, point=point))
        elif kind == "swipe":
            dx, dy = DIRECTION_VECTORS[DIRECTIONS[directions[i]]]
            end = (round(min(max(point[0] + dx * config.swipe_length, 0.0), 1.0), 4),
                   round(min(max(point[1] + dy * config.swipe_length, 0.0), 1.0), 4))
            actions.append(Action(kind, point=point, end=end))
        elif kind == "type":
            actions.append(Action(kind, text=_decode_span(out, i, f, config)))
        elif kind == "open_app":
            names = config.app_names
            actions.append(Action(kind, text=names[apps[i]] if names else ""))
        else:
            actions.append(Action(kind))
    return actions


QUOTES = frozenset({"'", '"', "\u2018", "\u2019", "\u201c", "\u201d"})
"""Quote marks as goal tokens: a typed text is a quoted phrase or a name, never across a quote."""


def valid_spans(f: Features, config: ActorConfig) -> torch.Tensor:
    """``[n_goal, n_goal]`` bool: the goal spans (start, end) the type head may decode: start <= end,
    at most ``max_span_tokens``; with ``quoted_spans``, none holding a quote mark (a quoted phrase's
    words, or words outside every quote)."""
    n = len(f.goal_tokens)
    j, k = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
    valid = (k >= j) & (k - j < config.max_span_tokens)
    if config.quoted_spans:
        quotes = torch.cumsum(torch.tensor([0] + [t.word in QUOTES for t in f.goal_tokens]), 0)  # [n_goal + 1]
        valid &= quotes[k + 1] == quotes[j]
    return valid


def _decode_span(out: ActorOutput, i: int, f: Features, config: ActorConfig) -> str:
    """The best goal span (:func:`valid_spans`) as the original goal text."""
    n = len(f.goal_tokens)
    if n == 0:
        return ""
    start = out.span_start_logits[i, :n]  # [n_goal]
    end = out.span_end_logits[i, :n]
    score = start[:, None] + end[None, :]  # [n_goal, n_goal]
    valid = valid_spans(f, config)
    if not valid.any():
        return ""
    best = int(score.masked_fill(~valid, -float("inf")).flatten().argmax())
    return span_text(f.goal, f.goal_tokens, best // n, best % n)


def sample_decode(out: ActorOutput, features: Sequence[Features], config: ActorConfig, n_samples: int,
                  generator: torch.Generator | Sequence[torch.Generator],
                  temperature: float = 1.0) -> list[list[Action]]:
    """``n_samples`` actions per prompt drawn from the heads' distributions (softmax of the logits
    over ``temperature``): the type first, then the argument its type needs — the pointed element,
    the swipe direction, the goal span (start, then end among the valid ends), the app.

    The sampled counterpart of :func:`decode` (SwitchMem's *sampled action preferences*): the same
    forward pass, so drawing costs no extra model call. Draws are made prompt by prompt, sample by
    sample, head by head from ``generator`` — one for the whole batch, or one per prompt (then a
    prompt's draws do not depend on the other prompts of its batch).
    """
    if n_samples < 1:
        raise DataError("n_samples", f"expected at least 1, got {n_samples}")
    if not temperature > 0:
        raise DataError("temperature", f"expected > 0, got {temperature}")
    gens = [generator] * len(features) if isinstance(generator, torch.Generator) else list(generator)
    if len(gens) != len(features):
        raise DataError("generator", f"one per prompt: {len(features)} prompts, {len(gens)} generators")

    def draw(logits: torch.Tensor, gen: torch.Generator) -> int:
        p = torch.softmax(logits.double() / temperature, -1)
        return int(torch.multinomial(p, 1, generator=gen))

    out_actions = []
    for i, f in enumerate(features):
        gen, drawn = gens[i], []
        for _ in range(n_samples):
            kind = ACTION_TYPES[draw(out.type_logits[i], gen)]
            if kind in ("tap", "long_press", "swipe"):
                k = draw(out.pointer_logits[i], gen) if len(f.elements) else None
                point = f.elements[k].center if k is not None else (0.5, 0.5)
                point = (round(point[0], 4), round(point[1], 4))
                if kind == "swipe":
                    dx, dy = DIRECTION_VECTORS[DIRECTIONS[draw(out.direction_logits[i], gen)]]
                    end = (round(min(max(point[0] + dx * config.swipe_length, 0.0), 1.0), 4),
                           round(min(max(point[1] + dy * config.swipe_length, 0.0), 1.0), 4))
                    drawn.append(Action(kind, point=point, end=end))
                else:
                    drawn.append(Action(kind, point=point))
            elif kind == "type":
                n = len(f.goal_tokens)
                if n == 0:
                    drawn.append(Action(kind, text=""))
                    continue
                if not config.quoted_spans:  # the valid ends of a start are j .. j + max_span_tokens - 1
                    j = draw(out.span_start_logits[i, :n], gen)
                    hi = min(n, j + config.max_span_tokens)
                    k = j + draw(out.span_end_logits[i, j:hi], gen)
                else:
                    valid = valid_spans(f, config)  # [n_goal, n_goal]
                    if not valid.any():
                        drawn.append(Action(kind, text=""))
                        continue
                    j = draw(out.span_start_logits[i, :n].masked_fill(~valid.any(1), -float("inf")), gen)
                    k = draw(out.span_end_logits[i, :n].masked_fill(~valid[j], -float("inf")), gen)
                drawn.append(Action(kind, text=span_text(f.goal, f.goal_tokens, j, k)))
            elif kind == "open_app":
                names = config.app_names
                drawn.append(Action(kind, text=names[draw(out.app_logits[i], gen)] if names else ""))
            else:
                drawn.append(Action(kind))
        out_actions.append(drawn)
    return out_actions

"""Turning a :class:`~guimem.core.policy.PolicyInput` into the miniature actor's tensors, and back.

:func:`featurise` reads one prompt (screen patches with their words, roles and exact-match
codes; goal, history and memory tokens; the memory image's patches) into :class:`Features`;
:func:`collate` pads a batch and chooses the memory modality shown at that moment, so one
featurisation serves every modality. :func:`targets_for` gives the training targets of a
demonstrated action and :func:`decode` turns the heads' outputs back into
:class:`~guimem.core.data.Action` s.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from PIL import Image

from guimem.actors.mini.config import (
    ACT_CONTEXT_SLOTS,
    DIRECTION_VECTORS,
    DIRECTIONS,
    IGNORE,
    MEMORY_MATCH,
    N_MATCH,
    N_ROLE_SPECIAL,
    SEG_ACT,
    SEG_GOAL,
    SEG_HISTORY,
    SEG_MEMORY_IMAGE,
    SEG_MEMORY_TEXT,
    SEG_SCREEN,
    ActorConfig,
)
from guimem.actors.mini.model import ActorOutput
from guimem.core.data import ACTION_TYPES, Action, DataError, UIElement
from guimem.core.describe import scroll_container, swipe_direction, target_element
from guimem.core.policy import MODALITIES, Modality, PolicyInput
from guimem.models.tokenizer import ACT, Token, Vocabulary, find_span, span_text, tokenize


@dataclass(frozen=True)
class Features:
    """One prompt's parts as tensors (unpadded); memory parts kept so a modality is chosen at collate."""

    screen_pixels: torch.Tensor  # [n_screen_patches, 3*p*p] uint8
    screen_words: torch.Tensor  # [n_screen_patches, max_words_per_patch] long, 0 = none
    goal_ids: torch.Tensor  # [n_goal] long
    history_ids: torch.Tensor  # [2 * n_history] long
    screen_roles: torch.Tensor  # [n_screen_patches] long, see :func:`role_ids`
    act_context: torch.Tensor  # [ACT_CONTEXT_SLOTS] long, see :func:`act_context_ids`
    memory_text_ids: torch.Tensor | None  # [n_memory_tokens] long
    memory_pixels: torch.Tensor | None  # [n_memory_patches, 3*p*p] uint8
    goal: str  # the goal text, for decoding spans ...
    goal_tokens: tuple[Token, ...]  # ... and its tokens (truncated like goal_ids)
    elements: tuple[UIElement, ...] = ()

    def has(self, modality: Modality) -> bool:
        """Whether the memory ``modality`` asks for is present."""
        need_t, need_i = modality in ("text", "both"), modality in ("image", "both")
        return (not need_t or self.memory_text_ids is not None) and (not need_i or self.memory_pixels is not None)


class ImagePatcher:
    """Resizes images and cuts them into flattened uint8 patches; caches by content hash."""

    def __init__(self, max_cache: int = 50_000):
        self._cache: dict[bytes, torch.Tensor] = {}
        self.max_cache = max_cache

    def __call__(self, image: Image.Image, height: int, width: int, patch: int) -> torch.Tensor:
        """``[rows*cols, 3*patch*patch]`` uint8 patches of ``image`` resized to ``height x width``."""
        rgb = image if image.mode == "RGB" else image.convert("RGB")
        salt = f"{rgb.size}{height}x{width}/{patch}".encode()  # the same pixels at another size: another key
        key = hashlib.blake2b(rgb.tobytes(), digest_size=16, key=salt).digest()
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        arr = np.asarray(rgb.resize((width, height), Image.Resampling.BOX), dtype=np.uint8)  # [H, W, 3]
        rows, cols = height // patch, width // patch
        patches = arr.reshape(rows, patch, cols, patch, 3).transpose(0, 2, 1, 3, 4).reshape(rows * cols, -1)
        out = torch.from_numpy(np.ascontiguousarray(patches))  # [rows*cols, 3*patch*patch]
        if len(self._cache) < self.max_cache:
            self._cache[key] = out
        return out


def patch_of(point: tuple[float, float], grid: tuple[int, int]) -> tuple[int, tuple[float, float]]:
    """Row-major patch index containing a normalized point, and the point's (x, y) offset in it."""
    rows, cols = grid
    fx, fy = point[0] * cols, point[1] * rows
    c, r = min(int(fx), cols - 1), min(int(fy), rows - 1)
    return r * cols + c, (min(max(fx - c, 0.0), 1.0), min(max(fy - r, 0.0), 1.0))


def element_patches(bounds: tuple[float, float, float, float], grid: tuple[int, int]) -> list[int]:
    """Row-major indices of the patches whose centre lies inside ``bounds`` (x0, y0, x1, y1)."""
    rows, cols = grid
    x0, y0, x1, y1 = bounds
    r_lo, r_hi = max(0, math.ceil(y0 * rows - 0.5)), min(rows - 1, math.floor(y1 * rows - 0.5))
    c_lo, c_hi = max(0, math.ceil(x0 * cols - 0.5)), min(cols - 1, math.floor(x1 * cols - 0.5))
    return [r * cols + c for r in range(r_lo, r_hi + 1) for c in range(c_lo, c_hi + 1)]


def label_patches(element: UIElement, grid: tuple[int, int], max_patches: int) -> list[int]:
    """Where a label is "seen": every patch the element covers, or its centre patch if that is none
    or more than ``max_patches`` (a large panel's text is not written all over it)."""
    covered = element_patches(element.bounds, grid)
    return covered if 0 < len(covered) <= max_patches else [patch_of(element.center, grid)[0]]


def label_words(elements: Sequence[UIElement], vocab: Vocabulary, grid: tuple[int, int], max_words: int,
                max_patches: int) -> torch.Tensor:
    """``[rows*cols, max_words]`` word ids of the visible labels on each patch (0 = none)."""
    rows, cols = grid
    out = torch.zeros(rows * cols, max_words, dtype=torch.long)
    fill = [0] * (rows * cols)
    for el in elements:
        if not el.text:
            continue
        ids = vocab.encode(el.text)
        for idx in label_patches(el, grid, max_patches):
            for w in ids:
                if fill[idx] < max_words:
                    out[idx, fill[idx]] = w
                    fill[idx] += 1
    return out


def role_key(element: UIElement) -> str:
    """A widget's role with its state: ``"toggle"``, or ``"toggle:on"`` when it is selected
    (toggled on, checked, chosen, focused)."""
    return f"{element.role}:on" if element.selected else element.role


def role_ids(elements: Sequence[UIElement], roles: Sequence[str], grid: tuple[int, int]) -> torch.Tensor:
    """``[rows*cols]`` the role (with its state, :func:`role_key`) of the innermost widget under
    each patch centre, from the UI tree.

    0 where no element covers the centre, 1 for a role not in ``roles``, else ``2 + roles.index``.
    The innermost widget is the smallest one by area (a toggle inside its list row is the toggle).
    This is the widget class an accessibility tree gives every AITW-style agent; like the word
    channel it stands in for what a real VLM reads off the pixels.
    """
    rows, cols = grid
    out = [0] * (rows * cols)
    area = [math.inf] * (rows * cols)
    index = {r: N_ROLE_SPECIAL + i for i, r in enumerate(roles)}
    for el in elements:
        x0, y0, x1, y1 = el.bounds
        a = (x1 - x0) * (y1 - y0)
        for idx in element_patches(el.bounds, grid):
            if a < area[idx]:
                area[idx], out[idx] = a, index.get(role_key(el), 1)
    return torch.tensor(out, dtype=torch.long)


def act_context_ids(history: Sequence[Action]) -> torch.Tensor:
    """``[ACT_CONTEXT_SLOTS]`` ids of the last action types, most recent first: slot ``j`` holds
    ``j * (1 + n_types) + 1 + type index``, or ``j * (1 + n_types)`` when the episode has no ``j+1``-th
    last action (so slot 0 also says "this is the first step").

    The history tokens carry the same types, but a transformer trained for minutes on a few
    thousand steps does not learn to route them to ``[ACT]`` (its type head stayed at the prior
    with the history tokens alone); the previous action as a direct input of the decision is the
    usual remedy of recurrent agents.
    """
    width = 1 + len(ACTION_TYPES)
    recent = list(history)[::-1][:ACT_CONTEXT_SLOTS]
    ids = [j * width + (1 + ACTION_TYPES.index(recent[j].type) if j < len(recent) else 0)
           for j in range(ACT_CONTEXT_SLOTS)]
    return torch.tensor(ids, dtype=torch.long)


def history_ids(history: Sequence[Action], vocab: Vocabulary, max_history: int) -> torch.Tensor:
    """``[2 * min(len(history), max_history)]`` ids: per action its type and a coarse argument."""
    ids: list[int] = []
    for a in list(history)[-max_history:] if max_history else []:
        if a.type == "swipe" and swipe_direction(a) != "none":
            arg = f"[H:{swipe_direction(a)}]"
        elif a.point is not None:
            arg = f"[H:at_{min(int(a.point[1] * 3), 2)}_{min(int(a.point[0] * 3), 2)}]"
        else:
            arg = "[H:-]"
        ids += [vocab.id(f"[H:{a.type}]"), vocab.id(arg)]
    return torch.tensor(ids, dtype=torch.long)


def featurise(inp: PolicyInput, vocab: Vocabulary, config: ActorConfig,
              patcher: ImagePatcher | None = None) -> Features:
    """Turn one :class:`PolicyInput` into tensors (both memory parts, when present)."""
    patcher = patcher or ImagePatcher(max_cache=0)
    p = config.patch_size
    goal_tokens = tuple(tokenize(inp.goal)[:config.max_goal_tokens])
    mem_text = None
    if inp.memory_text is not None:
        mem_text = torch.tensor([vocab.id(t.word) for t in tokenize(inp.memory_text)[:config.max_memory_tokens]],
                                dtype=torch.long)
    mem_pixels = None
    if inp.memory_image is not None:
        mem_pixels = patcher(inp.memory_image, config.memory_image_height, config.memory_image_width, p)
    return Features(
        screen_pixels=patcher(inp.screenshot, config.screen_height, config.screen_width, p),
        screen_words=label_words(inp.elements, vocab, config.screen_grid, config.max_words_per_patch,
                                 config.max_label_patches),
        goal_ids=torch.tensor([vocab.id(t.word) for t in goal_tokens], dtype=torch.long),
        history_ids=history_ids(inp.history, vocab, config.max_history),
        screen_roles=role_ids(inp.elements, config.widget_roles, config.screen_grid),
        act_context=act_context_ids(inp.history),
        memory_text_ids=mem_text, memory_pixels=mem_pixels,
        goal=inp.goal, goal_tokens=goal_tokens, elements=tuple(inp.elements))


def collate(features: Sequence[Features], modalities: Sequence[Modality], config: ActorConfig,
            vocab: Vocabulary) -> dict[str, torch.Tensor]:
    """Pad prompts into one batch; each keeps exactly the memory parts its modality names.

    Returns the keyword tensors of :meth:`GuiActor.forward` (right-padded to the longest prompt).
    """
    if len(features) != len(modalities):
        raise DataError("modalities", f"one per prompt: {len(features)} prompts, {len(modalities)} modalities")
    p2 = 3 * config.patch_size ** 2
    screen_rc = _grid_ids(config.screen_grid)
    memory_rc = _grid_ids(config.memory_grid)
    act_id = vocab.id(ACT)
    rows: list[list[tuple[int, torch.Tensor, torch.Tensor | None]]] = []
    for f, m in zip(features, modalities):
        if m not in MODALITIES:
            raise DataError("modality", f"expected one of {MODALITIES}, got {m!r}")
        if not f.has(m):
            raise DataError("modality", f"asked for memory {m!r} but the input carries {_present(f)}")
        parts = [(SEG_SCREEN, f.screen_pixels, None), (SEG_GOAL, f.goal_ids, None), (SEG_HISTORY, f.history_ids, None)]
        if m in ("text", "both"):
            parts.append((SEG_MEMORY_TEXT, f.memory_text_ids, None))
        if m in ("image", "both"):
            parts.append((SEG_MEMORY_IMAGE, f.memory_pixels, None))
        parts.append((SEG_ACT, torch.tensor([act_id]), None))
        rows.append(parts)
    lengths = [sum(len(t) for _, t, _ in parts) for parts in rows]
    b, s = len(rows), max(lengths)
    batch = {
        "input_ids": torch.zeros(b, s, dtype=torch.long),  # [batch, seq]
        "patch_pixels": torch.zeros(b, s, p2, dtype=torch.uint8),  # [batch, seq, 3*p*p]
        "patch_words": torch.zeros(b, s, config.max_words_per_patch, dtype=torch.long),  # [batch, seq, W]
        "segment_ids": torch.zeros(b, s, dtype=torch.long),
        "position_ids": torch.zeros(b, s, dtype=torch.long),
        "row_ids": torch.zeros(b, s, dtype=torch.long),
        "col_ids": torch.zeros(b, s, dtype=torch.long),
        "attention_mask": torch.zeros(b, s, dtype=torch.long),
        "match_ids": torch.zeros(b, s, dtype=torch.long),  # [batch, seq]; screen patches and memory text
    }
    if config.role_channel:
        batch["role_ids"] = torch.zeros(b, s, dtype=torch.long)  # [batch, seq]; screen patches only
    if config.act_context:
        batch["act_context_ids"] = torch.stack([f.act_context for f in features])  # [batch, ACT_CONTEXT_SLOTS]
    for i, (parts, f) in enumerate(zip(rows, features)):
        at = 0
        for seg, t, _ in parts:
            n = len(t)
            sl = slice(at, at + n)
            batch["segment_ids"][i, sl] = seg
            if seg in (SEG_SCREEN, SEG_MEMORY_IMAGE):
                rc = screen_rc if seg == SEG_SCREEN else memory_rc
                batch["patch_pixels"][i, sl] = t
                batch["row_ids"][i, sl], batch["col_ids"][i, sl] = rc[0], rc[1]
                if seg == SEG_SCREEN:
                    batch["patch_words"][i, sl] = f.screen_words
                    if config.role_channel:
                        batch["role_ids"][i, sl] = f.screen_roles
                    if config.exact_match:
                        shown = f.memory_text_ids if modalities[i] in ("text", "both") else None
                        batch["match_ids"][i, sl] = match_ids(f.screen_words, f.goal_ids, shown, vocab)
            else:
                batch["input_ids"][i, sl] = t
                if seg == SEG_MEMORY_TEXT and config.exact_match:
                    batch["match_ids"][i, sl] = memory_match_ids(t, f.goal_ids, vocab)
                if seg != SEG_ACT:
                    batch["position_ids"][i, sl] = torch.arange(1, n + 1)
            at += n
        batch["attention_mask"][i, :at] = 1
    return batch




def match_ids(patch_words: torch.Tensor, goal_ids: torch.Tensor, memory_ids: torch.Tensor | None,
              vocab: Vocabulary) -> torch.Tensor:
    """``[n_patches]`` exact-match codes (as DrQA's exact-match features): 0 for a patch without
    label words, else ``1 + 3 * g + m`` where ``g`` / ``m`` say whether none (0), some (1) or all
    (2) of its label's words occur in the goal / the shown memory text (punctuation ignored)."""
    words = patch_words  # [n_patches, max_words]
    content = (words > 0) & ~torch.isin(words, vocab.punctuation_ids)  # [n_patches, max_words]
    n = content.sum(-1)  # [n_patches]

    def level(text: torch.Tensor | None) -> torch.Tensor:
        if text is None or len(text) == 0:
            return torch.zeros_like(n)
        hit = (torch.isin(words, text) & content).sum(-1)
        return torch.where(hit == 0, 0, torch.where(hit < n, 1, 2))

    return torch.where(n > 0, 1 + N_MATCH * level(goal_ids) + level(memory_ids), 0)


def memory_match_ids(memory_ids: torch.Tensor, goal_ids: torch.Tensor, vocab: Vocabulary) -> torch.Tensor:
    """``[n_memory_tokens]`` exact-match codes of the memory text against the goal, the other
    direction of :func:`match_ids`: 0 for punctuation, else :data:`MEMORY_MATCH` plus whether the
    word occurs in the goal. A retrieved item about the same task shares the goal's words; one
    about another task does not, and its quoted labels are then distractors on this screen."""
    content = ~torch.isin(memory_ids, vocab.punctuation_ids)
    return torch.where(content, MEMORY_MATCH + torch.isin(memory_ids, goal_ids).long(), 0)


def _grid_ids(grid: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """1-based (row ids, column ids) of a row-major patch grid."""
    rows, cols = grid
    r = torch.arange(1, rows + 1).repeat_interleave(cols)
    c = torch.arange(1, cols + 1).repeat(rows)
    return r, c


def _present(f: Features) -> str:
    has_t, has_i = f.memory_text_ids is not None, f.memory_pixels is not None
    return "both" if has_t and has_i else "text only" if has_t else "image only" if has_i else "no memory"


# ============================================================================ targets and decoding
@dataclass(frozen=True)
class Targets:
    """The supervised labels of one example (``IGNORE`` where a head does not apply)."""

    type: int
    patch: int = IGNORE  # the patch holding the demonstrated point (its offset is regressed)
    patches: tuple[int, ...] = ()  # every patch that is as good: those of the target element
    offset: tuple[float, float] = (0.0, 0.0)
    direction: int = IGNORE
    span_start: int = IGNORE  # absolute prompt position (the goal starts after the screen)
    span_end: int = IGNORE
    app: int = IGNORE


def targets_for(action: Action, features: Features, config: ActorConfig) -> Targets:
    """Labels for ``action`` given the prompt it answers."""
    kw: dict[str, Any] = {"type": ACTION_TYPES.index(action.type)}
    if action.point is not None and action.type in ("tap", "long_press", "swipe"):
        grid = config.screen_grid
        kw["patch"], kw["offset"] = patch_of(action.point, grid)
        target = (scroll_container(action.point, features.elements) if action.type == "swipe"
                  else target_element(action, features.elements))
        same = element_patches(target.bounds, grid) if target is not None else []
        kw["patches"] = tuple(sorted(set(same) | {kw["patch"]}))
    if action.type == "swipe" and swipe_direction(action) != "none":
        kw["direction"] = DIRECTIONS.index(swipe_direction(action))
    if action.type == "type" and action.text:
        span = find_span(features.goal_tokens, action.text)
        if span is not None:
            kw["span_start"], kw["span_end"] = (config.n_screen_patches + span[0], config.n_screen_patches + span[1])
    if action.type == "open_app" and action.text in config.app_names:
        kw["app"] = config.app_names.index(action.text)
    return Targets(**kw)


def patch_sets(targets: Sequence[Targets], n_patches: int) -> torch.Tensor:
    """``[batch, n_patches]`` bool: the patches each example may point at (all False: no pointer target)."""
    out = torch.zeros(len(targets), n_patches, dtype=torch.bool)
    for i, t in enumerate(targets):
        out[i, list(t.patches)] = True
    return out


def stack_targets(targets: Sequence[Targets], n_patches: int) -> dict[str, torch.Tensor]:
    """The label keyword tensors of :meth:`GuiActor.forward` for a batch."""
    return {
        "type_labels": torch.tensor([t.type for t in targets]),
        "patch_labels": torch.tensor([t.patch for t in targets]),
        "patch_set_labels": patch_sets(targets, n_patches),  # [batch, n_screen_patches] bool
        "offset_labels": torch.tensor([t.offset for t in targets], dtype=torch.float32),  # [batch, 2]
        "direction_labels": torch.tensor([t.direction for t in targets]),
        "span_start_labels": torch.tensor([t.span_start for t in targets]),
        "span_end_labels": torch.tensor([t.span_end for t in targets]),
        "app_labels": torch.tensor([t.app for t in targets]),
    }


def decode(out: ActorOutput, features: Sequence[Features], config: ActorConfig) -> list[Action]:
    """Argmax decoding of each head into one :class:`Action` per prompt."""
    rows, cols = config.screen_grid
    types = out.type_logits.argmax(-1).tolist()
    patches = out.pointer_logits.argmax(-1).tolist()
    offsets = out.offset.tolist()
    directions = out.direction_logits.argmax(-1).tolist()
    apps = out.app_logits.argmax(-1).tolist()
    actions = []
    for i, f in enumerate(features):
        kind = ACTION_TYPES[types[i]]
        r, c = divmod(patches[i], cols)
        point = ((c + offsets[i][0]) / cols, (r + offsets[i][1]) / rows)
        if kind in ("tap", "long_press"):
            actions.append(Action(kind, point=point))
        elif kind == "swipe":
            dx, dy = DIRECTION_VECTORS[DIRECTIONS[directions[i]]]
            end = (min(max(point[0] + dx * config.swipe_length, 0.0), 1.0),
                   min(max(point[1] + dy * config.swipe_length, 0.0), 1.0))
            actions.append(Action(kind, point=point, end=end))
        elif kind == "type":
            actions.append(Action(kind, text=_decode_span(out, i, f, config)))
        elif kind == "open_app":
            names = config.app_names
            actions.append(Action(kind, text=names[apps[i]] if names else ""))
        else:
            actions.append(Action(kind))
    return actions


def _decode_span(out: ActorOutput, i: int, f: Features, config: ActorConfig) -> str:
    """The best goal span (start <= end, at most ``max_span_tokens``) as the original goal text."""
    n = len(f.goal_tokens)
    if n == 0:
        return ""
    base = config.n_screen_patches
    start = out.span_start_logits[i, base:base + n]  # [n_goal]
    end = out.span_end_logits[i, base:base + n]
    score = start[:, None] + end[None, :]  # [n_goal, n_goal]
    j, k = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
    valid = (k >= j) & (k - j < config.max_span_tokens)
    best = int(score.masked_fill(~valid, -float("inf")).flatten().argmax())
    return span_text(f.goal, f.goal_tokens, best // n, best % n)

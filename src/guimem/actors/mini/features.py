"""Turning a :class:`~guimem.core.policy.PolicyInput` into the miniature actor's tensors.

:func:`featurise` reads one prompt into :class:`Features`: one token per UI element (its label
words, role and state, box, and its pixels cut out of the full-size screenshot), a coarse view of
the screen as patches, goal, history and memory tokens, and the memory image cut along
:func:`guimem.smg.memories.image_layout` (the remembered screen as patches in the live screen's
grid, the crops of the touched elements as crop tokens). :func:`collate` pads a batch and chooses
the memory modality shown at that moment, so one featurisation serves every modality.
:func:`targets_for` gives the training targets of an action (:mod:`guimem.actors.mini.decoding`
turns the heads' outputs back into actions).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from PIL import Image

from guimem.actors.mini.config import (
    ACT_CONTEXT_SLOTS,
    DIRECTIONS,
    DONE_MATCH,
    EFFECT_TOKENS,
    IGNORE,
    MEMORY_MATCH,
    N_MATCH,
    N_PIXEL_LEVELS,
    N_ROLE_SPECIAL,
    PIXEL_LEVELS,
    SEG_ACT,
    SEG_ELEMENT,
    SEG_GOAL,
    SEG_HISTORY,
    SEG_MEMORY_CROP,
    SEG_MEMORY_IMAGE,
    SEG_MEMORY_TEXT,
    SEG_SCREEN,
    ActorConfig,
)
from guimem.core.data import ACTION_TYPES, Action, DataError, UIElement, pixel_box
from guimem.core.describe import swipe_direction, target_element
from guimem.core.policy import MODALITIES, Modality, PolicyInput
from guimem.models.tokenizer import ACT, Token, Vocabulary, find_span, tokenize
from guimem.smg.memories import crop_slots, image_layout
from guimem.smg.memories.render import MEMORY_CROPS

LABEL_FREE_DESCRIPTIONS = frozenset({"on", "off"})  # a switch's description is its state (the role carries it)


@dataclass(frozen=True)
class Features:
    """One prompt's parts as tensors (unpadded); memory parts kept so a modality is chosen at collate."""

    element_words: torch.Tensor  # [n_elements, max_element_words] long, 0 = none
    element_roles: torch.Tensor  # [n_elements] long, see :func:`role_index`
    element_boxes: torch.Tensor  # [n_elements, 4] float32: x0, y0, x1, y1 in [0, 1]
    element_cells: torch.Tensor  # [n_elements, 2] long: 1-based (row, column) of the centre on the screen grid
    element_crops: torch.Tensor  # [n_elements, 3*crop*crop] uint8
    screen_pixels: torch.Tensor  # [n_screen_patches, 3*p*p] uint8: the coarse view
    goal_ids: torch.Tensor  # [n_goal] long
    history_ids: torch.Tensor  # [n_history_tokens] long: see :func:`history_ids`
    act_context: torch.Tensor  # [ACT_CONTEXT_SLOTS] long, see :func:`act_context_ids`
    memory_text_ids: torch.Tensor | None  # [n_memory_tokens] long
    memory_pixels: torch.Tensor | None  # [n_memory_patches, 3*p*p] uint8: the remembered screen
    memory_crops: torch.Tensor | None  # [MEMORY_CROPS, 3*crop*crop] uint8: the touched elements
    goal: str  # the goal text, for decoding spans ...
    goal_tokens: tuple[Token, ...]  # ... and its tokens (truncated like goal_ids)
    elements: tuple[UIElement, ...] = ()  # the elements read, in token order
    memory_text_cut: bool = False  # the memory text was longer than the budget
    pixel_alike: torch.Tensor | None = None  # [n_elements, MEMORY_CROPS] long: see :func:`pixel_alike`

    def has(self, modality: Modality) -> bool:
        """Whether the memory ``modality`` asks for is present."""
        need_t, need_i = modality in ("text", "both"), modality in ("image", "both")
        return (not need_t or self.memory_text_ids is not None) and (not need_i or self.memory_pixels is not None)


class ImagePatcher:
    """Resizes images and cuts them into flattened uint8 patches or box crops; caches by content hash."""

    def __init__(self, max_cache: int = 50_000):
        self._cache: dict[bytes, torch.Tensor] = {}
        self.max_cache = max_cache

    def _key(self, rgb: Image.Image, salt: str) -> bytes:
        """A cache key for ``rgb`` read as ``salt`` says (size, boxes, ...): the same pixels read otherwise differ."""
        h = hashlib.blake2b(f"{rgb.size}{salt}".encode(), digest_size=16)
        h.update(rgb.tobytes())
        return h.digest()

    def __call__(self, image: Image.Image, height: int, width: int, patch: int) -> torch.Tensor:
        """``[rows*cols, 3*patch*patch]`` uint8 patches of ``image`` resized to ``height x width``."""
        rgb = image if image.mode == "RGB" else image.convert("RGB")
        key = self._key(rgb, f"{height}x{width}/{patch}")  # the same pixels at another size: another key
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

    def crops(self, image: Image.Image, boxes: Sequence[tuple[float, float, float, float]], side: int) -> torch.Tensor:
        """``[len(boxes), 3*side*side]`` uint8: each normalised box cut out of ``image`` at its own
        resolution and scaled to ``side`` x ``side`` (a label-free glyph keeps its shape)."""
        rgb = image if image.mode == "RGB" else image.convert("RGB")
        key = self._key(rgb, f"crops{side}{tuple(boxes)}")
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        w, h = rgb.size
        out = np.zeros((len(boxes), side, side, 3), dtype=np.uint8)
        for i, box in enumerate(boxes):
            out[i] = np.asarray(rgb.crop(pixel_box(box, w, h)).resize((side, side), Image.Resampling.BOX), dtype=np.uint8)
        t = torch.from_numpy(out.reshape(len(boxes), -1))  # [n, 3*side*side]
        if len(self._cache) < self.max_cache:
            self._cache[key] = t
        return t


def cell_of(point: tuple[float, float], grid: tuple[int, int]) -> tuple[int, int]:
    """1-based (row, column) of the grid cell holding a normalised point."""
    rows, cols = grid
    return min(int(point[1] * rows), rows - 1) + 1, min(int(point[0] * cols), cols - 1) + 1


def element_words(element: UIElement) -> str:
    """The words an element carries: its text, else its accessibility description (a switch's
    on/off is state, carried by its role); a label-free icon has none."""
    text = element.text.strip()
    if text:
        return text
    desc = element.description.strip()
    return "" if desc.lower() in LABEL_FREE_DESCRIPTIONS else desc


def word_matrix(texts: Sequence[str], vocab: Vocabulary, max_words: int) -> torch.Tensor:
    """``[len(texts), max_words]`` word ids of each text (0 = none)."""
    out = torch.zeros(len(texts), max_words, dtype=torch.long)
    for i, text in enumerate(texts):
        ids = vocab.encode(text)[:max_words] if text else []
        out[i, :len(ids)] = torch.tensor(ids, dtype=torch.long)
    return out


def role_key(element: UIElement) -> str:
    """A widget's role with its state: ``"toggle"``, or ``"toggle:on"`` when it is selected
    (toggled on, checked, chosen, focused)."""
    return f"{element.role}:on" if element.selected else element.role


def role_index(element: UIElement, roles: Sequence[str]) -> int:
    """The id of an element's role with its state (:func:`role_key`): ``2 + roles.index``, or 1 for
    a role not in ``roles`` (0 marks a slot that holds no element)."""
    key = role_key(element)
    return N_ROLE_SPECIAL + roles.index(key) if key in roles else 1


def type_index(action: Action, field: str) -> int:
    """The class id of ``action``'s type in the miniature's action space (:data:`ACTION_TYPES`); a
    recorded-only type (``answer``, ``wait``) is a DataError naming ``field``."""
    if action.type not in ACTION_TYPES:
        raise DataError(field, f"the miniature actor's action space {ACTION_TYPES} has no {action.type!r} "
                               "(a type only recordings of other agents carry)")
    return ACTION_TYPES.index(action.type)


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
    ids = [j * width + (1 + type_index(recent[j], "history") if j < len(recent) else 0)
           for j in range(ACT_CONTEXT_SLOTS)]
    return torch.tensor(ids, dtype=torch.long)


def what_it_did(action: Action, elements: Sequence[UIElement]) -> str:
    """The words of what ``action`` acted on, on the screen it was taken on: the label of the
    element a touch hit (its text, else its description), the text typed or answered, the app
    opened; empty for anything else (and for a touch of an unlabelled element)."""
    if action.type in ("tap", "long_press"):
        target = target_element(action, elements)
        return element_words(target) if target is not None else ""
    return action.text or "" if action.type in ("type", "answer", "open_app") else ""


def history_ids(inp: PolicyInput, vocab: Vocabulary, config: ActorConfig) -> torch.Tensor:
    """``[n]`` ids of the last ``max_history`` actions, oldest first: per action its type and a coarse
    argument (a 3x3 screen cell or a swipe's direction); with ``history_words`` the first words of
    what it did (:func:`what_it_did`); with ``history_effect`` whether the UI tree changed after it
    (the next action's tree, or the current one). The last two need ``inp.history_screens``."""
    actions = list(inp.history)[-config.max_history:] if config.max_history else []
    if actions and (config.history_words or config.history_effect) and not inp.history_screens:
        raise DataError("history_screens", "this actor's history reads the screens its actions were taken on "
                                           "(history_words, history_effect), and the input carries none")
    screens = list(inp.history_screens)[-len(actions):] if actions else []
    after = screens[1:] + [tuple(inp.elements)]
    ids: list[int] = []
    for k, a in enumerate(actions):
        if a.type == "swipe" and swipe_direction(a) != "none":
            arg = f"[H:{swipe_direction(a)}]"
        elif a.point is not None:
            arg = f"[H:at_{min(int(a.point[1] * 3), 2)}_{min(int(a.point[0] * 3), 2)}]"
        else:
            arg = "[H:-]"
        ids += [vocab.id(f"[H:{a.type}]"), vocab.id(arg)]
        if config.history_words and screens:
            ids += vocab.encode(what_it_did(a, screens[k]))[:config.history_words]
        if config.history_effect and screens:
            ids.append(vocab.id(EFFECT_TOKENS[0] if tuple(after[k]) != tuple(screens[k]) else EFFECT_TOKENS[1]))
    return torch.tensor(ids, dtype=torch.long)


def done_match_ids(goal_ids: torch.Tensor, history: torch.Tensor, vocab: Vocabulary) -> torch.Tensor:
    """``[n_goal]`` codes of the goal's words against the history's (``done_match``): 0 for
    punctuation, else :data:`DONE_MATCH` plus whether the word occurs among what the history did —
    what the task asked against what has been done, for the ``done`` decision."""
    content = ~torch.isin(goal_ids, vocab.punctuation_ids)
    return torch.where(content, DONE_MATCH + torch.isin(goal_ids, history).long(), 0)


def featurise(inp: PolicyInput, vocab: Vocabulary, config: ActorConfig,
              patcher: ImagePatcher | None = None) -> Features:
    """Turn one :class:`PolicyInput` into tensors (both memory parts, when present)."""
    patcher = patcher or ImagePatcher(max_cache=0)
    p, c = config.patch_size, config.crop_size
    elements = tuple(inp.elements[:config.max_elements])
    boxes = [e.bounds for e in elements]
    goal_tokens = tuple(tokenize(inp.goal)[:config.max_goal_tokens])
    mem_text, cut = None, False
    if inp.memory_text is not None:
        tokens = tokenize(inp.memory_text)
        cut = len(tokens) > config.max_memory_tokens
        mem_text = torch.tensor([vocab.id(t.word) for t in tokens[:config.max_memory_tokens]], dtype=torch.long)
    mem_pixels = mem_crops = None
    if inp.memory_image is not None:
        screen, _ = image_layout(inp.memory_image.size)
        mem_pixels = patcher(inp.memory_image.crop(screen), config.screen_height, config.screen_width, p)
        mem_crops = patcher.crops(inp.memory_image, crop_slots(inp.memory_image.size), c)
    element_crops = patcher.crops(inp.screenshot, boxes, c)
    return Features(
        element_words=word_matrix([element_words(e) for e in elements], vocab, config.max_element_words),
        element_roles=torch.tensor([role_index(e, config.widget_roles) for e in elements], dtype=torch.long),
        element_boxes=torch.tensor(boxes, dtype=torch.float32).reshape(len(elements), 4),
        element_cells=torch.tensor([cell_of(e.center, config.screen_grid) for e in elements],
                                   dtype=torch.long).reshape(len(elements), 2),
        element_crops=element_crops,
        screen_pixels=patcher(inp.screenshot, config.screen_height, config.screen_width, p),
        goal_ids=torch.tensor([vocab.id(t.word) for t in goal_tokens], dtype=torch.long),
        history_ids=history_ids(inp, vocab, config),
        act_context=act_context_ids(inp.history),
        memory_text_ids=mem_text, memory_pixels=mem_pixels, memory_crops=mem_crops,
        pixel_alike=pixel_alike(element_crops, mem_crops) if mem_crops is not None else None, goal=inp.goal, goal_tokens=goal_tokens, elements=elements, memory_text_cut=cut)


def collate(features: Sequence[Features], modalities: Sequence[Modality], config: ActorConfig,
            vocab: Vocabulary) -> dict[str, torch.Tensor]:
    """Pad prompts into one batch; each keeps exactly the memory parts its modality names.

    Every prompt opens with the batch's element slots — as many as its fullest screen has elements,
    at least one; a prompt's own fill the first, the rest are padding (masked) — then the screen
    patches, so the pointer and the goal sit at the same positions in every row. A prompt's answer
    does not depend on how many slots its batch has: padding is masked and no position code spans
    segments. Returns the keyword tensors of :meth:`GuiActor.forward` (right-padded to the longest
    prompt).
    """
    if len(features) != len(modalities):
        raise DataError("modalities", f"one per prompt: {len(features)} prompts, {len(modalities)} modalities")
    p2, c2 = 3 * config.patch_size ** 2, 3 * config.crop_size ** 2
    n_el = element_slots(features)
    screen_rc = _grid_ids(config.screen_grid)
    act_id = vocab.id(ACT)
    rows: list[list[tuple[int, int]]] = []  # per prompt: (segment, length) in order
    for f, m in zip(features, modalities):
        if m not in MODALITIES:
            raise DataError("modality", f"expected one of {MODALITIES}, got {m!r}")
        if not f.has(m):
            raise DataError("modality", f"asked for memory {m!r} but the input carries {_present(f)}")
        rows.append(prompt_parts(f, m, n_el))
    b, s = len(rows), max(sum(n for _, n in parts) for parts in rows)
    batch = {
        "input_ids": torch.zeros(b, s, dtype=torch.long),  # [batch, seq]: word tokens
        "patch_pixels": torch.zeros(b, s, p2, dtype=torch.uint8),  # [batch, seq, 3*p*p]: screen and memory patches
        "crop_pixels": torch.zeros(b, s, c2, dtype=torch.uint8),  # [batch, seq, 3*c*c]: elements and memory crops
        "element_words": torch.zeros(b, s, config.max_element_words, dtype=torch.long),  # [batch, seq, W]
        "element_boxes": torch.zeros(b, s, 4),  # [batch, seq, 4]
        "segment_ids": torch.zeros(b, s, dtype=torch.long),
        "position_ids": torch.zeros(b, s, dtype=torch.long),
        "row_ids": torch.zeros(b, s, dtype=torch.long),  # grid cell of a patch or of an element's centre
        "col_ids": torch.zeros(b, s, dtype=torch.long),
        "attention_mask": torch.zeros(b, s, dtype=torch.long),
        "match_ids": torch.zeros(b, s, dtype=torch.long),  # [batch, seq]; elements and memory text
    }
    if config.role_channel:
        batch["role_ids"] = torch.zeros(b, s, dtype=torch.long)  # [batch, seq]; elements only
    if config.pixel_match:  # [batch, seq, MEMORY_CROPS]; elements and memory crops, with the image shown
        batch["pixel_match_ids"] = torch.zeros(b, s, MEMORY_CROPS, dtype=torch.long)
    if config.act_context:
        batch["act_context_ids"] = torch.stack([f.act_context for f in features])  # [batch, ACT_CONTEXT_SLOTS]
    for i, (parts, f) in enumerate(zip(rows, features)):
        at = 0
        mask = batch["attention_mask"][i]
        for seg, n in parts:
            sl = slice(at, at + n)
            batch["segment_ids"][i, sl] = seg
            mask[sl] = 1
            if seg == SEG_ELEMENT:
                k = len(f.elements)
                el = slice(at, at + k)
                mask[at + k:at + n] = 0  # empty element slots: padding
                batch["segment_ids"][i, at + k:at + n] = 0
                batch["crop_pixels"][i, el] = f.element_crops
                batch["element_words"][i, el] = f.element_words
                batch["element_boxes"][i, el] = f.element_boxes
                batch["row_ids"][i, el], batch["col_ids"][i, el] = f.element_cells[:, 0], f.element_cells[:, 1]
                if config.role_channel:
                    batch["role_ids"][i, el] = f.element_roles
                if config.exact_match:
                    shown = f.memory_text_ids if modalities[i] in ("text", "both") else None
                    batch["match_ids"][i, el] = match_ids(f.element_words, f.goal_ids, shown, vocab)
                if config.pixel_match and modalities[i] in ("image", "both"):
                    batch["pixel_match_ids"][i, el] = pixel_match_ids(f.pixel_alike)
            elif seg in (SEG_SCREEN, SEG_MEMORY_IMAGE):
                batch["patch_pixels"][i, sl] = f.screen_pixels if seg == SEG_SCREEN else f.memory_pixels
                batch["row_ids"][i, sl], batch["col_ids"][i, sl] = screen_rc  # the remembered screen: the live grid
            elif seg == SEG_MEMORY_CROP:
                batch["crop_pixels"][i, sl] = f.memory_crops
                batch["position_ids"][i, sl] = torch.arange(1, n + 1)  # crop slot: the order of the touches
                if config.pixel_match:  # each remembered crop: how alike its likest live element is
                    likest = f.pixel_alike.max(0).values if len(f.pixel_alike) else torch.zeros(n, dtype=torch.long)
                    batch["pixel_match_ids"][i, sl] = pixel_match_ids(likest.diag_embed())
            else:
                t = {SEG_GOAL: f.goal_ids, SEG_HISTORY: f.history_ids, SEG_MEMORY_TEXT: f.memory_text_ids}.get(seg)
                batch["input_ids"][i, sl] = t if t is not None else torch.tensor([act_id])
                if seg == SEG_MEMORY_TEXT and config.exact_match:
                    batch["match_ids"][i, sl] = memory_match_ids(t, f.goal_ids, vocab)
                if seg == SEG_GOAL and config.done_match:
                    batch["match_ids"][i, sl] = done_match_ids(t, f.history_ids, vocab)
                if seg != SEG_ACT:
                    batch["position_ids"][i, sl] = torch.arange(1, n + 1)
            at += n
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


def pixel_alike(element_crops: torch.Tensor, memory_crops: torch.Tensor) -> torch.Tensor:
    """``[n_elements, n_memory_crops]`` long: how alike each live element's crop and each remembered
    crop of the memory image look — 0 for an empty crop slot, else 1 + the level of their |cosine|
    over :data:`PIXEL_LEVELS` (1: unlike, 2: alike, 3: the same).

    The counterpart, for the picture, of the text's exact-match codes: the crops are compared as
    grey images with their mean removed and their norm set to one, so the same glyph matches in
    every theme (a dark theme inverts the contrast: hence the absolute cosine); a flat crop (an
    empty slot, a blank element) matches nothing. No learning, the same on every machine up to the
    last bits of the cosine, which the levels' margins absorb."""
    def grey(crops: torch.Tensor) -> torch.Tensor:
        g = crops.reshape(len(crops), -1, 3).double().mean(-1)  # [n, crop*crop]
        g = g - g.mean(-1, keepdim=True)
        norm = g.norm(dim=-1, keepdim=True)
        return torch.where(norm > 1.0, g / norm.clamp(min=1e-9), torch.zeros_like(g))  # flat: no match

    live, remembered = grey(element_crops), grey(memory_crops)
    cos = (live @ remembered.T).abs()  # [n_elements, n_memory_crops]
    level = 1 + torch.bucketize(cos, torch.tensor(PIXEL_LEVELS, dtype=cos.dtype), right=True)
    present = (remembered.abs().sum(-1) > 0)[None, :] & (live.abs().sum(-1) > 0)[:, None]
    return torch.where(present, level, 0).long()


def pixel_match_ids(alike: torch.Tensor) -> torch.Tensor:
    """``[n, n_slots]`` embedding ids of :func:`pixel_alike` levels: slot ``j`` at level ``l > 0`` is
    ``1 + j * N_PIXEL_LEVELS + (l - 1)``; 0 (no crop in the slot) is padding."""
    slots = torch.arange(alike.shape[-1])
    return torch.where(alike > 0, 1 + slots * N_PIXEL_LEVELS + alike - 1, 0)


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
    element: int = IGNORE  # the element slot the action touches (a swipe: the element it starts on)
    direction: int = IGNORE
    span_start: int = IGNORE  # the typed text's first goal token (an index into the goal's tokens)
    span_end: int = IGNORE
    app: int = IGNORE


def touched(action: Action, elements: Sequence[UIElement]) -> int | None:
    """The index of the element an action touches: the target of a tap or long press; for a swipe
    the innermost element under its start (the list row it drags). None without one."""
    if action.point is None or action.type not in ("tap", "long_press", "swipe"):
        return None
    if action.type != "swipe":
        target = target_element(action, elements)
        return next(i for i, e in enumerate(elements) if e is target) if target is not None else None
    under = [i for i, e in enumerate(elements) if e.contains(action.point)]
    return min(under, key=lambda i: elements[i].area) if under else None


def targets_for(action: Action, features: Features, config: ActorConfig) -> Targets:
    """Labels for ``action`` given the prompt it answers."""
    kw: dict[str, Any] = {"type": type_index(action, "action")}
    index = touched(action, features.elements)
    if index is not None:
        kw["element"] = index
    if action.type == "swipe" and swipe_direction(action) != "none":
        kw["direction"] = DIRECTIONS.index(swipe_direction(action))
    if action.type == "type" and action.text:
        span = find_span(features.goal_tokens, action.text)
        if span is not None:
            kw["span_start"], kw["span_end"] = span
    if action.type == "open_app" and action.text in config.app_names:
        kw["app"] = config.app_names.index(action.text)
    return Targets(**kw)


def stack_targets(targets: Sequence[Targets]) -> dict[str, torch.Tensor]:
    """The label keyword tensors of :meth:`GuiActor.forward` for a batch."""
    return {
        "type_labels": torch.tensor([t.type for t in targets]),
        "element_labels": torch.tensor([t.element for t in targets]),
        "direction_labels": torch.tensor([t.direction for t in targets]),
        "span_start_labels": torch.tensor([t.span_start for t in targets]),
        "span_end_labels": torch.tensor([t.span_end for t in targets]),
        "app_labels": torch.tensor([t.app for t in targets]),
    }


def element_slots(features: Sequence[Features]) -> int:
    """The element slots a batch of ``features`` opens with: its fullest screen's elements, at least one."""
    return max([1] + [len(f.elements) for f in features])


def prompt_parts(f: Features, modality: Modality, slots: int) -> list[tuple[int, int]]:
    """The segments of one prompt in order, as ``(segment id, tokens)``: ``slots`` element slots, the
    screen, goal and history, the memory ``modality`` shows (which ``f`` must carry), ``[ACT]``."""
    parts = [(SEG_ELEMENT, slots), (SEG_SCREEN, len(f.screen_pixels)), (SEG_GOAL, len(f.goal_ids)),
             (SEG_HISTORY, len(f.history_ids))]
    if modality in ("text", "both"):
        parts.append((SEG_MEMORY_TEXT, len(f.memory_text_ids)))
    if modality in ("image", "both"):
        parts += [(SEG_MEMORY_IMAGE, len(f.memory_pixels)), (SEG_MEMORY_CROP, len(f.memory_crops))]
    parts.append((SEG_ACT, 1))
    return parts


def prompt_length(f: Features, modality: Modality) -> int:
    """Tokens of one prompt shown with ``modality``'s memory, its own elements counted (what
    :func:`collate` pads a batch to, less the empty element slots)."""
    return sum(n for _, n in prompt_parts(f, modality, len(f.elements)))

"""The miniature multimodal actor: a small transformer that reads the screen element by element
and its memory as text or as an image.

One prompt is one token sequence, in this order::

    [elements] [screen patches] [goal] [history] [memory text | -] [memory image: patches, crops | -] [ACT]

* **Elements.** One token per UI element (the first ``max_elements`` of the tree). A batch opens
  with as many element slots as its fullest screen has elements; a prompt's own fill the first and
  the rest are padding, so every prompt's elements sit at the same positions. A token is the sum of: the mean
  word embedding of its label (its text, else its accessibility description; a label-free icon
  has none), the embedding of its role with its state (``role_channel``: ``toggle:on``, a focused
  ``field``, ...), a linear code of its box, the (row, column) embedding of the screen-grid cell of
  its centre, and a linear projection of its **pixels**: its box cut out of the full-size
  screenshot and scaled to ``crop_size`` x ``crop_size``, so that a label-free glyph (⋮, ✓, a
  star, a photo) is visible to the model even where the coarse view blurs it.
* **Exact match** (``exact_match``, on by default). Each labelled element also adds the embedding
  of a code saying whether none, some or all of its label's words occur in the goal and in the
  memory text shown — the exact-match features of reading-comprehension models (Chen et al. 2017,
  DrQA): a from-scratch transformer trained for minutes does not learn to align a word in the
  prompt with the same word on screen; this does it for it. In the other direction every
  memory-text word says whether it occurs in the goal (:func:`memory_match_ids`).
* **Pixel match** (``pixel_match``, on by default), the same for the picture: with the memory image
  shown, each element adds, per remembered crop, the embedding of how alike the two look (unlike,
  alike, the same: the absolute cosine of the grey crops, :func:`~guimem.actors.mini.features.pixel_alike`),
  and each remembered crop how alike its likest live element is. A remembered bare glyph then
  points at the element that shows it now, whatever the theme, as a quoted label does.
* **Screen.** A coarse view: the screenshot resized to ``screen_height x screen_width`` and cut
  into ``patch_size`` patches, each projected and given its (row, column) embedding (the same
  embeddings the elements' cells use).
* **Goal, memory text.** Word tokens (:mod:`guimem.models.tokenizer`) with 1-D positions; the
  memory text up to ``max_memory_tokens`` (a budget that covers the p95 memory block).
* **History.** The last ``max_history`` actions: the type and a coarse argument each, and where the
  config asks, the words of what each touched or typed (``history_words``) and whether the screen
  changed after it (``history_effect``); with ``done_match`` each goal word is flagged when the
  history holds it (what the task asked against what has been done).
* **Memory image** (:func:`guimem.smg.memories.image_layout`). The remembered screen — the top-1
  retrieved item's first screen with its actions marked where they were made — patched like the
  live screen and given the *live* grid's row and column embeddings, so a mark in the memory and
  the element at that place now share a position code; and the crops of the elements the item
  touched, one token each (sharing the elements' pixel projection, so a remembered glyph and the
  same glyph on screen start alike; the crop slot as position). The memory image carries no words.
* Every position adds its segment's embedding. The final ``[ACT]`` token is where every head reads
  the decision; it also adds the embeddings of the last two action types (``act_context``).

The encoder is a pre-LN transformer (bidirectional attention, padding masked), initialised for
small data: query and key projections start equal and near ``mimetic_init`` x identity (mimetic
initialisation, Trockman & Kolter 2023), and word embeddings start ``word_init_scale`` times
larger than the other embeddings, so that from the first step a token attends to tokens with the
same word, glyph or grid cell. Heads on the final-norm state at ``[ACT]``:

* action type: 10 classes, :data:`guimem.core.data.ACTION_TYPES` order. With ``wide_type_head``
  (on by default) a linear "wide" head over the decision facts (:func:`decision_facts`: the last
  two action types and the element roles with state on screen) adds to these logits, trained at
  ``wide_lr_scale`` times the learning rate (wide-and-deep, Cheng et al. 2016);
* a pointer over the element slots (scaled dot product of the ``[ACT]`` state and each element's
  state through one shared projection, padding masked): a touch lands on the centre of the chosen
  element, and is still scored by the AITW and LearnGUI rules on its coordinates;
* swipe direction: 4 classes (:data:`DIRECTIONS`); a swipe starts on the pointed element and ends
  ``swipe_length`` away in that direction (clipped to the screen);
* text to type: a start/end span pointer over the goal tokens (logits indexed by goal token), decoded
  to the exact original substring of the goal;
* app to open: a class over ``config.app_names`` (the apps seen opened in training).

**Hidden states.** ``forward(..., output_hidden_states=True)`` returns ``hidden_states``, a
tuple of ``n_layers + 1`` tensors ``[batch, seq, d_model]``, and ``act_hidden_states``
``[batch, n_layers + 1, d_model]``: the same states at the final prompt token ``[ACT]``. Index 0
is the embedding layer's output (the input of block 1); index ``i`` is the residual stream after
block ``i``; none of them has the final LayerNorm applied (the heads apply it to index -1).
:class:`MiniActor` returns one example's ``[n_layers + 1, d_model]`` array per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers.utils import ModelOutput

from guimem.actors.mini.config import (
    ACT_CONTEXT_SLOTS,
    DIRECTIONS,
    IGNORE,
    N_MATCH_CODES,
    N_PIXEL_LEVELS,
    N_ROLE_SPECIAL,
    SEG_ACT,
    SEG_ELEMENT,
    SEG_GOAL,
    SEG_MEMORY_CROP,
    SEG_MEMORY_IMAGE,
    SEG_PAD,
    SEG_SCREEN,
    SEGMENTS,
    ActorConfig,
)
from guimem.core.data import ACTION_TYPES, DataError
from guimem.smg.memories.render import MEMORY_CROPS


@dataclass
class ActorOutput(ModelOutput):
    """What :meth:`GuiActor.forward` returns (fields left ``None`` when not computed)."""

    loss: torch.Tensor | None = None  # scalar, when labels are given
    losses: dict[str, torch.Tensor] | None = None  # the loss terms, detached
    type_logits: torch.Tensor | None = None  # [batch, n_types]
    pointer_logits: torch.Tensor | None = None  # [batch, element slots], -1e9 on empty slots
    direction_logits: torch.Tensor | None = None  # [batch, 4]
    span_start_logits: torch.Tensor | None = None  # [batch, goal slots]: per goal token, -1e9 past a row's goal
    span_end_logits: torch.Tensor | None = None  # [batch, goal slots], likewise
    app_logits: torch.Tensor | None = None  # [batch, n_apps]
    hidden_states: tuple[torch.Tensor, ...] | None = None  # n_layers+1 x [batch, seq, d_model]
    act_hidden_states: torch.Tensor | None = None  # [batch, n_layers+1, d_model] at [ACT]


class PatchProjection(nn.Linear):
    """Linear projection of flattened patch or crop pixels (its own type so its init can differ)."""


class WordEmbedding(nn.Embedding):
    """Word embeddings shared by text tokens and screen labels (its own type for its init)."""


class FactEmbedding(nn.Embedding):
    """Embeddings of categorical facts from the UI tree and the history (widget roles, recent action
    types); initialised at the word scale so a fact is as visible as a word from the start."""


class QKVProjection(nn.Linear):
    """The fused query/key/value projection (its own type for the mimetic init)."""


class SelfAttention(nn.Module):
    """Multi-head self-attention over the whole prompt, padding masked."""

    def __init__(self, config: ActorConfig):
        super().__init__()
        self.n_heads = config.num_attention_heads
        self.qkv = QKVProjection(config.hidden_size, 3 * config.hidden_size)
        self.out = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = config.attention_dropout

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape  # x: [batch, seq, d_model]; key_mask: [batch, 1, 1, seq] bool
        q, k, v = self.qkv(x).view(b, s, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.out(y.transpose(1, 2).reshape(b, s, d))  # [batch, seq, d_model]


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(ln(x)), then + mlp(ln(x))."""

    def __init__(self, config: ActorConfig):
        super().__init__()
        d = config.hidden_size
        self.ln_attn = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.attn = SelfAttention(config)
        self.ln_mlp = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.mlp = nn.Sequential(nn.Linear(d, config.intermediate_size), nn.GELU(),
                                 nn.Linear(config.intermediate_size, d))
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.ln_attn(x), key_mask))
        return x + self.drop(self.mlp(self.ln_mlp(x)))


class PromptEmbedding(nn.Module):
    """Embeds the mixed sequence: words, elements (words, role, box, cell, pixels), patches, positions, segments."""

    def __init__(self, config: ActorConfig):
        super().__init__()
        d, p, c = config.hidden_size, config.patch_size, config.crop_size
        rows, cols = config.screen_grid
        text_len = max(config.max_goal_tokens, config.history_width * config.max_history, config.max_memory_tokens)
        self.words = WordEmbedding(config.vocab_size, d, padding_idx=0)  # shared by text tokens and element labels
        self.patch = PatchProjection(3 * p * p, d, bias=False)
        self.crop = PatchProjection(3 * c * c, d, bias=False)  # element pixels and remembered crops
        self.box = nn.Linear(4, d)
        self.row = nn.Embedding(rows + 1, d, padding_idx=0)  # 0 = neither a patch nor an element
        self.col = nn.Embedding(cols + 1, d, padding_idx=0)
        self.position = nn.Embedding(text_len + 1, d, padding_idx=0)  # 0 = no position
        self.segment = nn.Embedding(len(SEGMENTS), d, padding_idx=SEG_PAD)
        self.match = nn.Embedding(N_MATCH_CODES + 2 * config.done_match, d, padding_idx=0)  # 0 = no code (or feature off)
        self.pixel_match = FactEmbedding(1 + MEMORY_CROPS * N_PIXEL_LEVELS, d, padding_idx=0)  # per crop slot and level
        self.role = FactEmbedding(N_ROLE_SPECIAL + len(config.widget_roles), d, padding_idx=0)  # 0 = not an element
        self.act_context = FactEmbedding(ACT_CONTEXT_SLOTS * (1 + len(ACTION_TYPES)), d)  # per slot: none + types
        self.drop = nn.Dropout(config.dropout)

    def forward(self, input_ids: torch.Tensor, patch_pixels: torch.Tensor, crop_pixels: torch.Tensor,
                element_words: torch.Tensor, element_boxes: torch.Tensor, segment_ids: torch.Tensor,
                position_ids: torch.Tensor, row_ids: torch.Tensor, col_ids: torch.Tensor,
                match_ids: torch.Tensor | None = None, role_ids: torch.Tensor | None = None,
                act_context_ids: torch.Tensor | None = None, pixel_match_ids: torch.Tensor | None = None) -> torch.Tensor:
        is_patch = (segment_ids == SEG_SCREEN) | (segment_ids == SEG_MEMORY_IMAGE)  # [batch, seq]
        is_crop = (segment_ids == SEG_ELEMENT) | (segment_ids == SEG_MEMORY_CROP)
        is_element = segment_ids == SEG_ELEMENT
        x = (self.words(input_ids) + self.position(position_ids) + self.segment(segment_ids)
             + self.row(row_ids) + self.col(col_ids))  # [batch, seq, d_model]
        # Pixels, boxes and labels only where a token has them (most tokens are words or patches):
        # the projections of the others would be multiplied by zero.
        x = _add_at(x, is_patch, self.patch(_unit(patch_pixels[is_patch])))  # 3*p*p patch pixels
        x = _add_at(x, is_crop, self.crop(_unit(crop_pixels[is_crop])))  # 3*c*c crop pixels
        words = element_words[is_element]  # [n_elements, max_element_words]
        label_mean = self.words(words).sum(-2) / (words > 0).sum(-1, keepdim=True).clamp(min=1)  # PAD words are zero
        x = _add_at(x, is_element, self.box(element_boxes[is_element]) + label_mean)
        if match_ids is not None:
            x = x + self.match(match_ids)
        if role_ids is not None:
            x = x + self.role(role_ids)
        if pixel_match_ids is not None:  # [batch, seq, MEMORY_CROPS]: one code per crop slot, 0 = none
            x = x + self.pixel_match(pixel_match_ids).sum(-2)
        if act_context_ids is not None:  # [batch, ACT_CONTEXT_SLOTS], added at each row's [ACT] token
            rows = torch.arange(len(x), device=x.device)
            x = x.index_put((rows, _act_index(segment_ids)), self.act_context(act_context_ids).sum(1), accumulate=True)
        return self.drop(x)  # [batch, seq, d_model]


class GuiActor(PreTrainedModel):
    """The miniature multimodal actor (see the module docstring for the prompt and heads)."""

    config_class = ActorConfig
    base_model_prefix = "actor"
    main_input_name = "input_ids"
    _supports_sdpa = True

    def __init__(self, config: ActorConfig):
        super().__init__(config)
        config.check()
        d = config.hidden_size
        self.embed = PromptEmbedding(config)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.num_hidden_layers))
        self.ln_final = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.type_head = nn.Linear(d, len(ACTION_TYPES))
        self.pointer = nn.Linear(d, d)  # one projection for query and key: same content scores high
        self.direction_head = nn.Linear(d, len(DIRECTIONS))
        self.span_query = nn.Linear(d, 2 * d)  # start and end queries
        self.span_key = nn.Linear(d, d)
        self.app_head = nn.Linear(d, max(1, len(config.app_names)))
        n_facts = ACT_CONTEXT_SLOTS * (1 + len(ACTION_TYPES)) + N_ROLE_SPECIAL + len(config.widget_roles)
        self.wide_type_head = WideHead(n_facts, len(ACTION_TYPES), bias=False) if config.wide_type_head else None
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        """Library defaults, then three deliberate changes (each skipped for loaded weights).

        * Patch and crop projections at the scale of the embeddings: a plain N(0, 0.02) projection
          of 3*p*p unit-scale pixels is ~sqrt(3*p*p) times larger than a word embedding and would
          drown an element's label words at the start.
        * Word embeddings ``word_init_scale`` times the usual scale: a word's identity dominates
          its token (and a labelled patch) at the start, so equal words look alike.
        * Mimetic attention (Trockman & Kolter 2023, "Mimetic initialization of self-attention
          layers"): query and key projections start equal and near ``mimetic_init`` x identity,
          so from the first step a token attends to tokens with similar content (the same word
          in the goal, the memory text and a screen label; the same grid cell in the screen and
          the memory image). Small-data transformers learn such matching far faster from there.
        """
        super()._init_weights(module)
        cfg = self.config
        if isinstance(module, PatchProjection) and not getattr(module.weight, "_is_hf_initialized", False):
            with torch.no_grad():
                module.weight.normal_(0.0, cfg.initializer_range / math.sqrt(module.in_features))
        if isinstance(module, (WordEmbedding, FactEmbedding)) and not getattr(module.weight, "_is_hf_initialized", False):
            with torch.no_grad():
                module.weight.normal_(0.0, cfg.initializer_range * cfg.word_init_scale)
                if module.padding_idx is not None:
                    module.weight[module.padding_idx].zero_()
        fresh = not getattr(getattr(module, "weight", None), "_is_hf_initialized", False)
        if isinstance(module, WideHead) and fresh:
            with torch.no_grad():
                module.weight.zero_()
        if isinstance(module, QKVProjection) and cfg.mimetic_init > 0 and fresh:
            d = cfg.hidden_size
            qk = torch.eye(d) * cfg.mimetic_init + torch.randn(d, d) * cfg.initializer_range  # [d_model, d_model]
            with torch.no_grad():
                module.weight[:d].copy_(qk)
                module.weight[d:2 * d].copy_(qk)

    def forward(self, input_ids: torch.Tensor, patch_pixels: torch.Tensor, crop_pixels: torch.Tensor,
                element_words: torch.Tensor, element_boxes: torch.Tensor, segment_ids: torch.Tensor,
                position_ids: torch.Tensor, row_ids: torch.Tensor, col_ids: torch.Tensor,
                attention_mask: torch.Tensor, match_ids: torch.Tensor | None = None,
                role_ids: torch.Tensor | None = None, act_context_ids: torch.Tensor | None = None,
                pixel_match_ids: torch.Tensor | None = None, output_hidden_states: bool = False, type_labels: torch.Tensor | None = None,
                element_labels: torch.Tensor | None = None, direction_labels: torch.Tensor | None = None,
                span_start_labels: torch.Tensor | None = None, span_end_labels: torch.Tensor | None = None,
                app_labels: torch.Tensor | None = None, **_: Any) -> ActorOutput:
        """Run the prompt; with ``type_labels`` also the loss (other labels ``IGNORE`` where absent).

        Inputs are what :func:`collate` builds: ``[batch, seq]`` ids/masks, ``patch_pixels``
        ``[batch, seq, 3*p*p]`` and ``crop_pixels`` ``[batch, seq, 3*c*c]`` uint8, ``element_words``
        ``[batch, seq, max_element_words]``, ``element_boxes`` ``[batch, seq, 4]``, ``match_ids``
        and ``role_ids`` ``[batch, seq]``, ``act_context_ids`` ``[batch, 2]``. Every row opens with
        the batch's element slots (as many as its fullest screen has elements, at least one), then
        the screen patches, then the goal.
        """
        n_el = max(1, int((segment_ids == SEG_ELEMENT).sum(-1).max()))  # element slots: a prompt's own come first
        goal = slice(n_el + self.config.n_screen_patches, None)
        n_goal = max(1, int((segment_ids[:, goal] == SEG_GOAL).sum(-1).max()))
        goal = slice(goal.start, goal.start + n_goal)  # the goal slots: every row's goal starts there
        act_index = _act_index(segment_ids)  # [batch]
        rows = torch.arange(len(act_index), device=act_index.device)
        key_mask = attention_mask.bool()[:, None, None, :]  # [batch, 1, 1, seq]

        h = self.embed(input_ids, patch_pixels, crop_pixels, element_words, element_boxes, segment_ids, position_ids,
                       row_ids, col_ids, match_ids, role_ids, act_context_ids, pixel_match_ids)
        states = [h]  # residual stream: index 0 = embedding output
        for block in self.blocks:
            h = block(h, key_mask)
            states.append(h)
        z = self.ln_final(h)  # [batch, seq, d_model]
        z_act = z[rows, act_index]  # [batch, d_model]
        z_el = z[:, :n_el]  # [batch, element slots, d_model]; the element slots open every prompt

        d = z.shape[-1]
        empty = segment_ids[:, :n_el] != SEG_ELEMENT  # [batch, element slots]
        pointer_logits = (torch.einsum("bed,bd->be", self.pointer(z_el), self.pointer(z_act)) / math.sqrt(d)
                          ).masked_fill(empty, -1e9)
        start_q, end_q = self.span_query(z_act).chunk(2, dim=-1)  # [batch, d_model] each
        span_keys = self.span_key(z[:, goal])  # [batch, goal slots, d_model]
        not_goal = segment_ids[:, goal] != SEG_GOAL
        span_start = (torch.einsum("bsd,bd->bs", span_keys, start_q) / math.sqrt(d)).masked_fill(not_goal, -1e9)
        span_end = (torch.einsum("bsd,bd->bs", span_keys, end_q) / math.sqrt(d)).masked_fill(not_goal, -1e9)

        type_logits = self.type_head(z_act)  # [batch, n_types]
        if self.wide_type_head is not None and role_ids is not None and act_context_ids is not None:
            type_logits = type_logits + self.wide_type_head(decision_facts(role_ids, segment_ids, act_context_ids,
                                                                           self.wide_type_head.in_features))
        out = ActorOutput(type_logits=type_logits, pointer_logits=pointer_logits,
                          direction_logits=self.direction_head(z_act), span_start_logits=span_start,
                          span_end_logits=span_end, app_logits=self.app_head(z_act))
        if output_hidden_states:
            out.hidden_states = tuple(states)
            out.act_hidden_states = torch.stack([s[rows, act_index] for s in states], dim=1)  # [batch, L+1, d]
        if type_labels is not None:
            out.loss, out.losses = self._loss(out, type_labels, element_labels, direction_labels, span_start_labels,
                                              span_end_labels, app_labels)
        return out

    def _loss(self, out: ActorOutput, type_labels: torch.Tensor, element_labels: torch.Tensor | None,
              direction_labels: torch.Tensor | None, span_start_labels: torch.Tensor | None,
              span_end_labels: torch.Tensor | None,
              app_labels: torch.Tensor | None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Type CE + pointer CE over the element slots + direction CE + span CE + app CE, each where it applies."""
        weights = self.config.type_class_weights
        weights = None if not weights else torch.tensor(weights, dtype=out.type_logits.dtype)
        terms = {"type": self.config.type_loss_weight * F.cross_entropy(out.type_logits, type_labels, weight=weights)}

        def ce(name: str, logits: torch.Tensor, labels: torch.Tensor | None) -> None:
            if labels is not None and bool((labels != IGNORE).any()):
                terms[name] = F.cross_entropy(logits, labels, ignore_index=IGNORE)

        ce("pointer", out.pointer_logits, element_labels)
        ce("direction", out.direction_logits, direction_labels)
        ce("span_start", out.span_start_logits, span_start_labels)
        ce("span_end", out.span_end_logits, span_end_labels)
        ce("app", out.app_logits, app_labels)
        loss = sum(terms.values())
        return loss, {k: v.detach() for k, v in terms.items()}


class WideHead(nn.Linear):
    """The wide half of a wide-and-deep head (Cheng et al. 2016): action-type logits linear in the
    decision facts (:func:`decision_facts`), added to the deep head's. Starts at zero."""


def decision_facts(role_ids: torch.Tensor, segment_ids: torch.Tensor, act_context_ids: torch.Tensor,
                   n_facts: int) -> torch.Tensor:
    """``[batch, n_facts]`` 0/1: which of the last action types (one-hot per slot of
    ``act_context_ids``) and which element roles with state (anywhere on the screen) the prompt holds.

    Which *kind* of action comes next is mostly a function of these facts (a focused field after a
    tap: type; a toggle just switched on: done), and a linear read of them is learned in a few
    hundred steps, where the deep path alone stayed at the prior within the training budget.
    """
    b = len(role_ids)
    facts = torch.zeros(b, n_facts, dtype=torch.float32, device=role_ids.device)
    facts.scatter_(1, act_context_ids, 1.0)
    n_context = ACT_CONTEXT_SLOTS * (1 + len(ACTION_TYPES))
    on_screen = torch.where(segment_ids == SEG_ELEMENT, role_ids, 0)  # [batch, seq]
    facts[:, n_context:].scatter_(1, on_screen, 1.0)
    facts[:, n_context] = 0.0  # role id 0: not an element, not a fact
    return facts


def _unit(pixels: torch.Tensor) -> torch.Tensor:
    """uint8 pixels as floats of roughly unit scale."""
    return (pixels.float() / 255.0 - 0.5) / 0.25


def _add_at(x: torch.Tensor, where: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``x`` with ``values`` (``[where.sum(), d]``, in row-major order) added at the ``[batch, seq]``
    positions ``where`` is true (out of place, so gradients flow to both)."""
    return x.index_put(torch.nonzero(where, as_tuple=True), values, accumulate=True)


def _act_index(segment_ids: torch.Tensor) -> torch.Tensor:
    """Position of the single ``[ACT]`` token of each row; raises if a row has none or several."""
    is_act = segment_ids == SEG_ACT  # [batch, seq]
    counts = is_act.sum(-1)
    if bool((counts != 1).any()):
        raise DataError("segment_ids", f"every prompt needs exactly one [ACT] token, got counts {counts.tolist()}")
    return is_act.long().argmax(-1)


AutoConfig.register(ActorConfig.model_type, ActorConfig, exist_ok=True)
AutoModel.register(ActorConfig, GuiActor, exist_ok=True)

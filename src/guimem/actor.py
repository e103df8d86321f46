"""The miniature multimodal actor: a small transformer that reads memory as text and as an image.

One prompt is one token sequence, in this order::

    [screen patches] [goal tokens] [history tokens] [memory text | -] [memory image patches | -] [ACT]

* **Screen.** The screenshot is resized to ``screen_height x screen_width`` pixels and cut into
  ``patch_size``-pixel square patches (row-major), each linearly projected and given a learned
  2-D (row, column) position embedding. A model this small cannot read rendered text from
  pixels, so every screen patch also adds the mean word embedding of the visible labels
  (``UIElement.text``; never ``description``) written on it — each label on every patch its
  element covers (only its centre patch for large panels): a documented stand-in for the OCR a
  real VLM's vision tower does. Label-free icons carry no words, only pixels.
* **Exact match** (``exact_match``, on by default). Each labelled screen patch also adds the
  embedding of a code saying whether none, some or all of its label's words occur in the goal
  and in the memory text shown — the exact-match features of reading-comprehension models
  (Chen et al. 2017, DrQA). A from-scratch transformer trained for minutes on a few thousand
  steps does not learn to align a word in the prompt with the same word on screen; this does it
  for it, and the model still learns when to trust the match. Without memory text the memory
  half of the code is "none", so the code is part of what showing the text changes. In the other
  direction every memory-text word says whether it occurs in the goal (:func:`memory_match_ids`):
  whether the retrieved experience is about this task is then visible in the first layer.
* **Widget roles** (``role_channel``, on by default). Each screen patch also adds the embedding
  of the UI-tree role and state (button, field, toggle, list item, dialog, ...; ``:on`` when
  toggled on, checked or focused; ``config.widget_roles``, learned from the training screens) of
  the innermost widget under its centre: the widget class and state an accessibility tree gives
  an agent.
* **Goal, memory text.** Word tokens (:mod:`guimem.tokenizer`) with 1-D positions.
* **History.** The last ``max_history`` actions, two tokens each: the type and a coarse
  argument (the 3x3 screen cell of a point, the direction of a swipe, or none).
* **Memory image.** Resized to ``memory_image_height x memory_image_width`` and patched like
  the screen, sharing its projection and its row/column embeddings (so a mark at a place in a
  remembered screen and that place on the current screen start from the same position code).
  Memory patches are **pixels only**: a rendered memory carries no UI tree, and a thumbnail is
  less legible than the live screen, so giving it the word channel would hand the image the
  text's advantage for free.
* Every position adds its segment's embedding (screen, goal, history, memory text, memory
  image, act). The final ``[ACT]`` token is where every head reads the model's decision; it
  also adds the embeddings of the last two action types (``act_context``, on by default; "none
  yet" at the start of an episode), the previous action as a direct input of the decision.

The encoder is a pre-LN transformer (bidirectional attention, padding masked), initialised for
small data: query and key projections start equal and near ``mimetic_init`` x identity (mimetic
initialisation, Trockman & Kolter 2023), and word embeddings start ``word_init_scale`` times
larger than the other embeddings, so that from the first step a token attends to tokens with
the same word or the same grid cell. Heads on the final-norm state at ``[ACT]``:

* action type: 10 classes, :data:`guimem.data.ACTION_TYPES` order. With ``wide_type_head`` (on by
  default) a linear "wide" head over the decision facts (:func:`decision_facts`: the last two
  action types and the widget roles with state on screen) adds to these logits, trained at
  ``wide_lr_scale`` times the learning rate (wide-and-deep, Cheng et al. 2016). The deep head
  alone stayed at the prior (always ``tap``) within the training budget although a linear
  model on those facts types 70% of held-out steps right: Adam moves each weight by about the
  learning rate per step, so a few hundred steps cannot grow the logit gaps those decisions
  need;
* a point: a pointer over the screen patches (scaled dot product of the ``[ACT]`` state and each
  screen-patch state through one shared projection) plus an in-patch offset in [0, 1]^2 regressed
  from the ``[ACT]`` and chosen-patch states. Its training target is a set: every patch of the
  touched element (of the scrolled list, for a swipe), since touching any of them is the same
  action; the loss is the negative log of the probability mass on the set;
* swipe direction: 4 classes (:data:`DIRECTIONS`, the way the finger moves); a swipe starts at
  the pointed point and ends ``swipe_length`` away in that direction (clipped to the screen);
* text to type: a start/end span pointer over the goal tokens, decoded to the exact original
  substring of the goal;
* app to open: a class over ``config.app_names`` (the apps seen opened in training). The goal
  often does not name the app ("turn on dark mode"), so a pointer over goal tokens would fail
  exactly where experience matters; an unseen app cannot be produced (documented limitation).

**Hidden states.** ``forward(..., output_hidden_states=True)`` returns ``hidden_states``, a
tuple of ``n_layers + 1`` tensors ``[batch, seq, d_model]``, and ``act_hidden_states``
``[batch, n_layers + 1, d_model]``: the same states at the final prompt token ``[ACT]``. Index 0
is the embedding layer's output (the input of block 1); index ``i`` is the residual stream after
block ``i``; none of them has the final LayerNorm applied (the heads apply it to index -1).
:class:`MiniActor` returns one example's ``[n_layers + 1, d_model]`` array per step.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn
from tqdm.auto import tqdm
from transformers import AutoConfig, AutoModel, PretrainedConfig, PreTrainedModel
from transformers.utils import ModelOutput

from guimem.data import ACTION_TYPES, Action, DataError, Episode, UIElement
from guimem.describe import scroll_container, target_element
from guimem.episodes import load_screenshot
from guimem.metrics import MatchConfig, action_class, action_match, step_accuracy
from guimem.retrieval import read_results
from guimem.policy import MODALITIES, Modality, PolicyInput, PolicyOutput
from guimem.tokenizer import ACT, PAD, Token, Vocabulary, find_span, span_text, tokenize

DIRECTIONS: tuple[str, ...] = ("up", "down", "left", "right")
"""Swipe directions: the way the finger moves (``up`` = lift point above touch point)."""
_DIRECTION_VECTORS = {"up": (0.0, -1.0), "down": (0.0, 1.0), "left": (-1.0, 0.0), "right": (1.0, 0.0)}

# Segment ids; 0 is padding (its embedding row is fixed at zero and never attended to).
SEG_PAD, SEG_SCREEN, SEG_GOAL, SEG_HISTORY, SEG_MEMORY_TEXT, SEG_MEMORY_IMAGE, SEG_ACT = range(7)
SEGMENTS: tuple[str, ...] = ("pad", "screen", "goal", "history", "memory_text", "memory_image", "act")

N_ROLE_SPECIAL = 2  # role ids: 0 = no widget under the patch centre, 1 = a role not seen in training
ACT_CONTEXT_SLOTS = 2  # the [ACT] token's context: the types of the last and the second-to-last action

STRICT_MATCH = MatchConfig(variant="aitw", text_rule="token_f1", match_app_name=True)
"""Step matching used to score the actor: AITW touch rules, typed text by token F1, app names compared."""

IGNORE = -100  # label value for "this head has no target on this example"
VOCAB_FILE = "vocab.json"


def history_tokens() -> list[str]:
    """The special tokens that spell an action history: types, 3x3 cells, directions, none."""
    kinds = [f"[H:{t}]" for t in ACTION_TYPES]
    cells = [f"[H:at_{r}_{c}]" for r in range(3) for c in range(3)]
    return kinds + cells + [f"[H:{d}]" for d in DIRECTIONS] + ["[H:-]"]


# ============================================================================ config
class ActorConfig(PretrainedConfig):
    """Hyper-parameters of :class:`GuiActor` (saved as ``config.json`` beside the weights)."""

    model_type = "guimem_actor"

    vocab_size: int = 256  # word ids: named tokens + hash buckets (set from the Vocabulary)
    hidden_size: int = 64  # d_model
    num_hidden_layers: int = 6  # transformer blocks (hidden states: num_hidden_layers + 1)
    num_attention_heads: int = 2  # 32-wide heads: word matches stand out at initialisation
    intermediate_size: int = 128  # MLP width
    dropout: float = 0.0  # on embeddings and residual branches (few epochs: no need)
    attention_dropout: float = 0.0  # on attention weights (non-zero forces the slow unfused CPU kernel)
    layer_norm_eps: float = 1e-5
    initializer_range: float = 0.02
    screen_height: int = 96  # screenshot resized to this many pixels high ...
    screen_width: int = 48  # ... and this wide (phone aspect ratio 2:1)
    memory_image_height: int = 96  # memory image resized to this size (same as the screen
    memory_image_width: int = 48  #   by default so position codes line up)
    patch_size: int = 8  # square patch side in pixels (screen 96x48 -> 12 x 6 = 72 patches)
    max_words_per_patch: int = 6  # label words kept per screen patch (word channel)
    max_label_patches: int = 12  # a label is written on every patch its element covers, up to this many
    max_goal_tokens: int = 32  # goal truncated to this many tokens
    max_history: int = 4  # last actions shown (2 tokens each)
    max_memory_tokens: int = 64  # memory text truncated to this many tokens (about 1.5 items)
    max_span_tokens: int = 8  # longest text span the type head may decode
    swipe_length: float = 0.3  # swipe distance (normalized screen units) from the pointed point
    app_names: list[str] | None = None  # classes of the open_app head, in order
    offset_loss_weight: float = 1.0  # weight of the L1 in-patch offset loss
    type_loss_weight: float = 1.0  # weight of the action-type cross-entropy
    type_class_weights: list[float] | None = None  # per-class weights of that cross-entropy (None: all 1)
    mimetic_init: float = 1.0  # query = key projection starts near this x identity (0: plain random init)
    word_init_scale: float = 3.0  # word embeddings start this many times larger than the other embeddings
    exact_match: bool = True  # screen patches flag whether their label's words occur in the goal / memory text
    widget_roles: list[str] | None = None  # UI-tree roles a screen patch can carry (set from the training screens)
    role_channel: bool = True  # each screen patch adds the embedding of the role of the widget under its centre
    act_context: bool = True  # the [ACT] token adds embeddings of the last two action types (or "none yet")
    wide_type_head: bool = True  # action-type logits also read the role and last-type facts linearly (needs both above)

    def __post_init__(self, **kwargs):
        if self.app_names is None:
            self.app_names = []
        if self.widget_roles is None:
            self.widget_roles = []
        super().__post_init__(**kwargs)

    @property
    def screen_grid(self) -> tuple[int, int]:
        """(rows, columns) of screen patches."""
        return self.screen_height // self.patch_size, self.screen_width // self.patch_size

    @property
    def memory_grid(self) -> tuple[int, int]:
        """(rows, columns) of memory-image patches."""
        return self.memory_image_height // self.patch_size, self.memory_image_width // self.patch_size

    @property
    def n_screen_patches(self) -> int:
        rows, cols = self.screen_grid
        return rows * cols

    def check(self) -> None:
        """Raise :class:`DataError` naming the first inconsistent field."""
        for name in ("screen_height", "screen_width", "memory_image_height", "memory_image_width"):
            if getattr(self, name) % self.patch_size:
                raise DataError(name, f"must be a multiple of patch_size={self.patch_size}, got {getattr(self, name)}")
        if self.hidden_size % self.num_attention_heads:
            raise DataError("num_attention_heads", f"must divide hidden_size={self.hidden_size}")
        if self.num_hidden_layers < 1:
            raise DataError("num_hidden_layers", "must be >= 1")


# ============================================================================ model
@dataclass
class ActorOutput(ModelOutput):
    """What :meth:`GuiActor.forward` returns (fields left ``None`` when not computed)."""

    loss: torch.Tensor | None = None  # scalar, when labels are given
    losses: dict[str, torch.Tensor] | None = None  # the loss terms, detached
    type_logits: torch.Tensor | None = None  # [batch, n_types]
    pointer_logits: torch.Tensor | None = None  # [batch, n_screen_patches]
    offset: torch.Tensor | None = None  # [batch, 2] in-patch (x, y) in [0, 1] of the argmax patch
    direction_logits: torch.Tensor | None = None  # [batch, 4]
    span_start_logits: torch.Tensor | None = None  # [batch, seq], -inf outside the goal
    span_end_logits: torch.Tensor | None = None  # [batch, seq], -inf outside the goal
    app_logits: torch.Tensor | None = None  # [batch, n_apps]
    hidden_states: tuple[torch.Tensor, ...] | None = None  # n_layers+1 x [batch, seq, d_model]
    act_hidden_states: torch.Tensor | None = None  # [batch, n_layers+1, d_model] at [ACT]


class PatchProjection(nn.Linear):
    """Linear projection of flattened patch pixels (its own type so its init can differ)."""


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
    """Embeds the mixed sequence: words, patches (pixels + label words), positions, segments."""

    def __init__(self, config: ActorConfig):
        super().__init__()
        d, p = config.hidden_size, config.patch_size
        rows = max(config.screen_grid[0], config.memory_grid[0])
        cols = max(config.screen_grid[1], config.memory_grid[1])
        text_len = max(config.max_goal_tokens, 2 * config.max_history, config.max_memory_tokens)
        self.words = WordEmbedding(config.vocab_size, d, padding_idx=0)  # shared by text and patch labels
        self.patch = PatchProjection(3 * p * p, d, bias=False)
        self.row = nn.Embedding(rows + 1, d, padding_idx=0)  # 0 = not a patch
        self.col = nn.Embedding(cols + 1, d, padding_idx=0)
        self.position = nn.Embedding(text_len + 1, d, padding_idx=0)  # 0 = not a text token
        self.segment = nn.Embedding(len(SEGMENTS), d, padding_idx=SEG_PAD)
        self.match = nn.Embedding(N_MATCH_CODES, d, padding_idx=0)  # 0 = no code (or feature off)
        self.role = FactEmbedding(N_ROLE_SPECIAL + len(config.widget_roles), d, padding_idx=0)  # 0 = no widget
        self.act_context = FactEmbedding(ACT_CONTEXT_SLOTS * (1 + len(ACTION_TYPES)), d)  # per slot: none + types
        self.drop = nn.Dropout(config.dropout)

    def forward(self, input_ids: torch.Tensor, patch_pixels: torch.Tensor, patch_words: torch.Tensor,
                segment_ids: torch.Tensor, position_ids: torch.Tensor, row_ids: torch.Tensor,
                col_ids: torch.Tensor, match_ids: torch.Tensor | None = None, role_ids: torch.Tensor | None = None,
                act_context_ids: torch.Tensor | None = None) -> torch.Tensor:
        is_patch = (row_ids > 0).unsqueeze(-1)  # [batch, seq, 1]
        pixels = (patch_pixels.float() / 255.0 - 0.5) / 0.25  # [batch, seq, 3*p*p], roughly unit scale
        label_sum = self.words(patch_words).sum(-2)  # [batch, seq, d_model]; PAD rows are zero
        n_labels = (patch_words > 0).sum(-1, keepdim=True).clamp(min=1)  # [batch, seq, 1]
        x = (self.words(input_ids) + self.position(position_ids) + self.segment(segment_ids)
             + is_patch * self.patch(pixels) + self.row(row_ids) + self.col(col_ids) + label_sum / n_labels)
        if match_ids is not None:
            x = x + self.match(match_ids)
        if role_ids is not None:
            x = x + self.role(role_ids)
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
        self.offset_head = nn.Sequential(nn.Linear(2 * d, d), nn.GELU(), nn.Linear(d, 2))
        self.direction_head = nn.Linear(d, len(DIRECTIONS))
        self.span_query = nn.Linear(d, 2 * d)  # start and end queries
        self.span_key = nn.Linear(d, d)
        self.app_head = nn.Linear(d, max(1, len(config.app_names)))
        n_facts = ACT_CONTEXT_SLOTS * (1 + len(ACTION_TYPES)) + N_ROLE_SPECIAL + len(config.widget_roles)
        self.wide_type_head = WideHead(n_facts, len(ACTION_TYPES), bias=False) if config.wide_type_head else None
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        """Library defaults, then three deliberate changes (each skipped for loaded weights).

        * Patch projection at the scale of the embeddings: a plain N(0, 0.02) projection of 3*p*p
          unit-scale pixels is ~sqrt(3*p*p) times larger than a word embedding and would drown
          the label-word channel of a patch at the start.
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

    def forward(self, input_ids: torch.Tensor, patch_pixels: torch.Tensor, patch_words: torch.Tensor,
                segment_ids: torch.Tensor, position_ids: torch.Tensor, row_ids: torch.Tensor,
                col_ids: torch.Tensor, attention_mask: torch.Tensor, match_ids: torch.Tensor | None = None,
                role_ids: torch.Tensor | None = None, act_context_ids: torch.Tensor | None = None,
                output_hidden_states: bool = False, type_labels: torch.Tensor | None = None,
                patch_labels: torch.Tensor | None = None, patch_set_labels: torch.Tensor | None = None,
                offset_labels: torch.Tensor | None = None, direction_labels: torch.Tensor | None = None,
                span_start_labels: torch.Tensor | None = None, span_end_labels: torch.Tensor | None = None,
                app_labels: torch.Tensor | None = None, **_: Any) -> ActorOutput:
        """Run the prompt; with ``type_labels`` also the loss (other labels ``IGNORE`` where absent).

        Inputs are what :func:`collate` builds: ``[batch, seq]`` ids/masks, ``patch_pixels``
        ``[batch, seq, 3*p*p]`` uint8, ``patch_words`` ``[batch, seq, max_words_per_patch]``,
        ``match_ids`` ``[batch, seq]`` (see :func:`match_ids`), ``role_ids`` ``[batch, seq]`` (see
        :func:`role_ids`) and ``act_context_ids`` ``[batch, 2]`` (see :func:`act_context_ids`).
        """
        n_patch = self.config.n_screen_patches
        act_index = _act_index(segment_ids)  # [batch]
        rows = torch.arange(len(act_index), device=act_index.device)
        key_mask = attention_mask.bool()[:, None, None, :]  # [batch, 1, 1, seq]

        h = self.embed(input_ids, patch_pixels, patch_words, segment_ids, position_ids, row_ids, col_ids, match_ids,
                       role_ids, act_context_ids)
        states = [h]  # residual stream: index 0 = embedding output
        for block in self.blocks:
            h = block(h, key_mask)
            states.append(h)
        z = self.ln_final(h)  # [batch, seq, d_model]
        z_act = z[rows, act_index]  # [batch, d_model]
        z_screen = z[:, :n_patch]  # [batch, n_patch, d_model]; the screen always opens the prompt

        d = z.shape[-1]
        pointer_logits = torch.einsum("bpd,bd->bp", self.pointer(z_screen), self.pointer(z_act)) / math.sqrt(d)
        start_q, end_q = self.span_query(z_act).chunk(2, dim=-1)  # [batch, d_model] each
        span_keys = self.span_key(z)  # [batch, seq, d_model]
        not_goal = segment_ids != SEG_GOAL
        span_start = (torch.einsum("bsd,bd->bs", span_keys, start_q) / math.sqrt(d)).masked_fill(not_goal, -1e9)
        span_end = (torch.einsum("bsd,bd->bs", span_keys, end_q) / math.sqrt(d)).masked_fill(not_goal, -1e9)

        chosen = pointer_logits.argmax(-1)  # [batch]: the argmax patch, or the gold one where labelled
        if patch_labels is not None:
            chosen = torch.where(patch_labels >= 0, patch_labels, chosen)
        offset = torch.sigmoid(self.offset_head(torch.cat([z_act, z_screen[rows, chosen]], -1)))  # [batch, 2]

        type_logits = self.type_head(z_act)  # [batch, n_types]
        if self.wide_type_head is not None and role_ids is not None and act_context_ids is not None:
            type_logits = type_logits + self.wide_type_head(decision_facts(role_ids, segment_ids, act_context_ids,
                                                                           self.wide_type_head.in_features))
        out = ActorOutput(type_logits=type_logits, pointer_logits=pointer_logits, offset=offset,
                          direction_logits=self.direction_head(z_act), span_start_logits=span_start,
                          span_end_logits=span_end, app_logits=self.app_head(z_act))
        if output_hidden_states:
            out.hidden_states = tuple(states)
            out.act_hidden_states = torch.stack([s[rows, act_index] for s in states], dim=1)  # [batch, L+1, d]
        if type_labels is not None:
            out.loss, out.losses = self._loss(out, type_labels, patch_labels, patch_set_labels, offset_labels,
                                              direction_labels, span_start_labels, span_end_labels, app_labels)
        return out

    def _loss(self, out: ActorOutput, type_labels: torch.Tensor, patch_labels: torch.Tensor | None,
              patch_set_labels: torch.Tensor | None, offset_labels: torch.Tensor | None,
              direction_labels: torch.Tensor | None, span_start_labels: torch.Tensor | None,
              span_end_labels: torch.Tensor | None,
              app_labels: torch.Tensor | None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Type CE + pointer NLL + offset L1 + direction CE + span CE + app CE, each where it applies.

        The pointer's target is a set: every patch of the target element (the scrolled list for a
        swipe) is an equally right place to touch, so its loss is the negative log of the
        probability mass on the set (plain CE on ``patch_labels`` when no set is given).
        """
        weights = self.config.type_class_weights
        weights = None if not weights else torch.tensor(weights, dtype=out.type_logits.dtype)
        terms = {"type": self.config.type_loss_weight * F.cross_entropy(out.type_logits, type_labels, weight=weights)}
        if patch_set_labels is not None and bool(patch_set_labels.any()):
            has = patch_set_labels.any(-1)  # [batch]
            logits = out.pointer_logits[has]  # [n, n_patch]
            on_set = logits.masked_fill(~patch_set_labels[has], -1e9).logsumexp(-1)
            terms["pointer"] = (logits.logsumexp(-1) - on_set).mean()
            patch_labels_for_ce = None
        else:
            patch_labels_for_ce = patch_labels

        def ce(name: str, logits: torch.Tensor, labels: torch.Tensor | None) -> None:
            if labels is not None and bool((labels != IGNORE).any()):
                terms[name] = F.cross_entropy(logits, labels, ignore_index=IGNORE)

        ce("pointer", out.pointer_logits, patch_labels_for_ce)
        ce("direction", out.direction_logits, direction_labels)
        ce("span_start", out.span_start_logits, span_start_labels)
        ce("span_end", out.span_end_logits, span_end_labels)
        ce("app", out.app_logits, app_labels)
        if patch_labels is not None and offset_labels is not None and bool((patch_labels >= 0).any()):
            has = patch_labels >= 0
            terms["offset"] = self.config.offset_loss_weight * F.l1_loss(out.offset[has], offset_labels[has])
        loss = sum(terms.values())
        return loss, {k: v.detach() for k, v in terms.items()}


class WideHead(nn.Linear):
    """The wide half of a wide-and-deep head (Cheng et al. 2016): action-type logits linear in the
    decision facts (:func:`decision_facts`), added to the deep head's. Starts at zero."""


def decision_facts(role_ids: torch.Tensor, segment_ids: torch.Tensor, act_context_ids: torch.Tensor,
                   n_facts: int) -> torch.Tensor:
    """``[batch, n_facts]`` 0/1: which of the last action types (one-hot per slot of
    ``act_context_ids``) and which widget roles with state (anywhere on the screen) the prompt holds.

    Which *kind* of action comes next is mostly a function of these facts (a focused field after a
    tap: type; a toggle just switched on: done), and a linear read of them is learned in a few
    hundred steps, where the deep path alone stayed at the prior within the training budget.
    """
    b = len(role_ids)
    facts = torch.zeros(b, n_facts, dtype=torch.float32, device=role_ids.device)
    facts.scatter_(1, act_context_ids, 1.0)
    n_context = ACT_CONTEXT_SLOTS * (1 + len(ACTION_TYPES))
    on_screen = torch.where(segment_ids == SEG_SCREEN, role_ids, 0)  # [batch, seq]
    facts[:, n_context:].scatter_(1, on_screen, 1.0)
    facts[:, n_context] = 0.0  # role id 0: no widget under the patch, not a fact
    return facts


def _act_index(segment_ids: torch.Tensor) -> torch.Tensor:
    """Position of the single ``[ACT]`` token of each row; raises if a row has none or several."""
    is_act = segment_ids == SEG_ACT  # [batch, seq]
    counts = is_act.sum(-1)
    if bool((counts != 1).any()):
        raise DataError("segment_ids", f"every prompt needs exactly one [ACT] token, got counts {counts.tolist()}")
    return is_act.long().argmax(-1)


AutoConfig.register(ActorConfig.model_type, ActorConfig, exist_ok=True)
AutoModel.register(ActorConfig, GuiActor, exist_ok=True)


# ============================================================================ featurisation
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
        if a.type == "swipe":
            arg = f"[H:{swipe_direction(a)}]"
        elif a.point is not None:
            arg = f"[H:at_{min(int(a.point[1] * 3), 2)}_{min(int(a.point[0] * 3), 2)}]"
        else:
            arg = "[H:-]"
        ids += [vocab.id(f"[H:{a.type}]"), vocab.id(arg)]
    return torch.tensor(ids, dtype=torch.long)


def swipe_direction(action: Action) -> str:
    """The way the finger moves in a swipe: the dominant axis of end - start (ties: vertical)."""
    if action.point is None or action.end is None:
        raise DataError("end", f"a {action.type} has no start and end point")
    dx, dy = action.end[0] - action.point[0], action.end[1] - action.point[1]
    if abs(dy) >= abs(dx):
        return "down" if dy > 0 else "up"
    return "right" if dx > 0 else "left"


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


N_MATCH = 3  # per text: none, some or all of a label's words occur in it
MEMORY_MATCH = 1 + N_MATCH ** 2  # memory-text codes: MEMORY_MATCH (word not in the goal), MEMORY_MATCH + 1 (in it)
N_MATCH_CODES = MEMORY_MATCH + 2


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
    if action.type == "swipe":
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
            dx, dy = _DIRECTION_VECTORS[DIRECTIONS[directions[i]]]
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


# ============================================================================ the Policy
class MiniActor:
    """A trained :class:`GuiActor` with its vocabulary, as a :class:`guimem.policy.Policy`.

    Deterministic: eval mode, no gradients, argmax decoding. ``hidden_states`` of each output
    is ``[n_layers + 1, d_model]`` float32 at the final prompt token ``[ACT]``, index 0 = the
    embedding layer.
    """

    def __init__(self, model: GuiActor, vocab: Vocabulary, batch_size: int = 64):
        if model.config.vocab_size != len(vocab):
            raise DataError("vocab_size", f"model has {model.config.vocab_size} word ids, vocabulary {len(vocab)}")
        self.model = model.eval()
        self.vocab = vocab
        self.batch_size = batch_size
        self.patcher = ImagePatcher(max_cache=4096)

    @property
    def config(self) -> ActorConfig:
        return self.model.config

    def featurise(self, inp: PolicyInput) -> Features:
        """This actor's tensors for one input."""
        return featurise(inp, self.vocab, self.config, self.patcher)

    @torch.no_grad()
    def act(self, inputs: Sequence[PolicyInput], output_hidden_states: bool = False) -> list[PolicyOutput]:
        """Answer a batch of inputs; with ``output_hidden_states`` fill ``hidden_states``."""
        outputs: list[PolicyOutput] = []
        for lo in range(0, len(inputs), self.batch_size):
            chunk = inputs[lo:lo + self.batch_size]
            feats = [self.featurise(x) for x in chunk]
            outputs += self.act_features(feats, [x.modality for x in chunk], output_hidden_states)
        return outputs

    @torch.no_grad()
    def act_features(self, feats: Sequence[Features], modalities: Sequence[Modality],
                     output_hidden_states: bool = False) -> list[PolicyOutput]:
        """Answer already-featurised prompts (one batch), each with the memory of its modality."""
        self.model.eval()
        batch = collate(feats, modalities, self.config, self.vocab)
        out = self.model(**batch, output_hidden_states=output_hidden_states)
        actions = decode(out, feats, self.config)
        type_logp = F.log_softmax(out.type_logits, -1).max(-1).values.tolist()
        hs = out.act_hidden_states.float().numpy() if output_hidden_states else None  # [batch, L+1, d]
        return [PolicyOutput(action=a, hidden_states=None if hs is None else hs[i].copy(),
                             info={"modality": m, "type_logprob": type_logp[i]})
                for i, (a, m) in enumerate(zip(actions, modalities))]

    def save(self, path: str) -> None:
        """Write ``config.json``, ``model.safetensors`` and ``vocab.json`` to ``path``, atomically."""
        parent = os.path.dirname(os.path.abspath(path)) or "."
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(path)}-")
        try:
            self.model.save_pretrained(tmp)
            self.vocab.save(os.path.join(tmp, VOCAB_FILE))
            old = None
            if os.path.exists(path):
                old = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(path)}-old-")
                os.replace(path, os.path.join(old, "model"))
            os.replace(tmp, path)
            if old is not None:
                shutil.rmtree(old)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @classmethod
    def load(cls, path: str, batch_size: int = 64) -> "MiniActor":
        """Read an actor written by :meth:`save` (safetensors weights, JSON config and vocabulary)."""
        for name in ("config.json", "model.safetensors", VOCAB_FILE):
            if not os.path.isfile(os.path.join(path, name)):
                raise DataError(name, "missing from the actor folder", path)
        vocab = Vocabulary.load(os.path.join(path, VOCAB_FILE))
        model = GuiActor.from_pretrained(path)
        return cls(model, vocab, batch_size)


# ============================================================================ training
@dataclass(frozen=True)
class ActorExample:
    """One behaviour-cloning example: what the actor saw and what the demonstrator did."""

    input: PolicyInput  # memory_text / memory_image: the retrieved experience (either may be None)
    target: Action
    episode_id: str = ""
    step: int = -1
    memory_kind: str | None = None  # which memory produced the experience (None: no memory)


class ExperienceMemory(Protocol):
    """What example building needs of a memory (:class:`guimem.memories.Memory` satisfies it)."""

    def retrieve(self, screenshot: Any, goal: str) -> Any: ...

    def render_text(self, retrieved: Any) -> str: ...

    def render_image(self, retrieved: Any) -> Image.Image: ...


MemoryFactory = Callable[[str, Sequence[Episode]], ExperienceMemory]
"""``factory(kind, episodes)``: a memory of ``kind`` built from exactly ``episodes``."""


def assign_folds(episode_ids: Sequence[str], k: int, seed: int) -> dict[str, int]:
    """Each episode id to one of ``k`` folds of (nearly) equal size, shuffled by ``seed``."""
    if k < 2:
        raise DataError("k_folds", f"needs at least 2 folds so every memory excludes its episode, got {k}")
    ids = sorted(set(episode_ids))
    order = np.random.default_rng(seed).permutation(len(ids))
    return {ids[j]: rank % k for rank, j in enumerate(order)}


def episode_steps(episode: Episode, store_root: str | Path, max_history: int) -> list[tuple[PolicyInput, Action]]:
    """Every step of ``episode`` as a memory-less input (screen, tree, goal, recent history) and its action."""
    out = []
    for i, step in enumerate(episode.steps):
        history = tuple(s.action for s in episode.steps[max(0, i - max_history):i]) if max_history else ()
        screenshot = load_screenshot(store_root, step.screenshot)
        out.append((PolicyInput(screenshot, step.elements, episode.goal, history), step.action))
    return out


def _with_memory(inp: PolicyInput, memory: ExperienceMemory, query: Any, renders: dict) -> PolicyInput:
    """``inp`` with the memory's retrieval for ``query`` rendered as text and as image (renders memoised)."""
    retrieved = memory.retrieve(query, inp.goal)
    key = (id(memory), tuple(getattr(retrieved, "ids", ())) or id(retrieved))
    if key not in renders:
        renders[key] = (memory.render_text(retrieved), memory.render_image(retrieved))
    text, image = renders[key]
    return PolicyInput(inp.screenshot, inp.elements, inp.goal, inp.history, text, image)


def build_examples(episodes: Sequence[Episode], store_root: str | Path, memories: Mapping[str, ExperienceMemory],
                   kinds_per_step: int | None = None, seed: int = 0, max_history: int = 4,
                   query_vectors: Mapping[str, np.ndarray] | None = None, progress: bool = True) -> list[ActorExample]:
    """Examples of ``episodes`` with experience retrieved from ``memories`` (built without them).

    Each step gets ``kinds_per_step`` memory kinds drawn at random (all of them when None), one
    example per kind; ``query_vectors`` (screenshot path -> embedding) spare re-embedding screens.
    """
    kinds = sorted(memories)
    n_kinds = len(kinds) if kinds_per_step is None else min(kinds_per_step, len(kinds))
    rng = np.random.default_rng(seed)
    renders: dict = {}
    out: list[ActorExample] = []
    for episode in tqdm(episodes, desc="examples", unit="episode", disable=not progress):
        for i, (inp, action) in enumerate(episode_steps(episode, store_root, max_history)):
            shot = episode.steps[i].screenshot
            query = query_vectors[shot] if query_vectors is not None and shot in query_vectors else inp.screenshot
            chosen = kinds if n_kinds == len(kinds) else sorted(rng.choice(kinds, n_kinds, replace=False).tolist())
            for kind in chosen:
                out.append(ActorExample(_with_memory(inp, memories[kind], query, renders), action, episode.id, i, kind))
    return out


def build_kfold_examples(episodes: Sequence[Episode], store_root: str | Path, factory: MemoryFactory,
                         kinds: Sequence[str], k_folds: int, seed: int, kinds_per_step: int | None = 1,
                         max_history: int = 4, query_vectors: Mapping[str, np.ndarray] | None = None,
                         progress: bool = True) -> list[ActorExample]:
    """Training examples whose memory never holds their own episode (no leakage).

    The episodes are split into ``k_folds`` folds; the steps of fold ``f`` read memories of every
    kind built by ``factory`` from the other folds only. Returned in the order of ``episodes``.
    """
    folds = assign_folds([e.id for e in episodes], k_folds, seed)
    by_id: dict[str, list[ActorExample]] = {}
    for f in range(k_folds):
        inside = [e for e in episodes if folds[e.id] == f]
        outside = [e for e in episodes if folds[e.id] != f]
        memories = {kind: factory(kind, outside) for kind in kinds}
        for ex in build_examples(inside, store_root, memories, kinds_per_step, seed + 1 + f, max_history,
                                 query_vectors, progress):
            by_id.setdefault(ex.episode_id, []).append(ex)
    return [ex for e in episodes for ex in by_id.get(e.id, [])]


def examples_from_retrieval(episodes: Sequence[Episode], store_root: str | Path, retrieval_dir: str | Path,
                            kinds: Sequence[str], max_history: int = 4) -> list[ActorExample]:
    """Held-out examples with the memory the ``retrieval_eval`` stage retrieved for every step.

    Reads ``<retrieval_dir>/<kind>/steps.jsonl`` (text block and image path per step); one
    example per step and kind, in episode, step and ``kinds`` order.
    """
    records: dict[tuple[str, str, int], tuple[str, str]] = {}
    for kind in kinds:
        folder = Path(retrieval_dir) / kind
        for r in read_results(folder / "steps.jsonl"):
            records[(kind, r["episode_id"], int(r["step"]))] = (r["text"], str(folder / r["image"]))
    images: dict[str, Image.Image] = {}
    out = []
    for episode in episodes:
        for i, (inp, action) in enumerate(episode_steps(episode, store_root, max_history)):
            for kind in kinds:
                key = (kind, episode.id, i)
                if key not in records:
                    raise DataError("steps.jsonl", f"no retrieved memory for {episode.id} step {i}",
                                    str(Path(retrieval_dir) / kind))
                text, image_path = records[key]
                if image_path not in images:
                    with Image.open(image_path) as im:
                        images[image_path] = im.convert("RGB")
                out.append(ActorExample(PolicyInput(inp.screenshot, inp.elements, inp.goal, inp.history, text,
                                                    images[image_path]), action, episode.id, i, kind))
    return out


def memory_names_target(example: ActorExample) -> bool:
    """Whether the memory text quotes the label of the element the demonstrator touched while the
    goal does not: a step where (textual) experience carries what the goal leaves out."""
    target = target_element(example.target, example.input.elements)
    if target is None or not target.text or example.input.memory_text is None:
        return False
    label = target.text.lower()
    return f'"{label}"' in example.input.memory_text.lower() and label not in example.input.goal.lower()


def majority_action(actions: Sequence[Action], grid: tuple[int, int]) -> Action:
    """The most frequent action of a training set: its commonest type, at that type's commonest
    patch centre for touches (ties: first seen) — the baseline a policy must beat."""
    if not actions:
        raise DataError("actions", "no actions to take a majority of")
    kind = max(ACTION_TYPES, key=lambda t: sum(a.type == t for a in actions))
    if kind not in ("tap", "long_press", "swipe"):
        same = [a for a in actions if a.type == kind]
        return Action(kind, text=max(same, key=lambda a: sum(b.text == a.text for b in same)).text
                      if kind in ("type", "open_app") else None)
    patches = [patch_of(a.point, grid)[0] for a in actions if a.type == kind]
    best = max(dict.fromkeys(patches), key=patches.count)
    r, c = divmod(best, grid[1])
    point = ((c + 0.5) / grid[1], (r + 0.5) / grid[0])
    if kind == "swipe":
        return Action("swipe", point=point, end=(point[0], max(0.0, point[1] - 0.3)))
    return Action(kind, point=point)


@dataclass(frozen=True)
class TrainConfig:
    """Behaviour-cloning hyper-parameters (the model's own live in ``model``)."""

    epochs: int = 8  # passes over the examples
    batch_size: int = 16
    lr: float = 2e-3  # AdamW peak learning rate (linear warm-up, cosine decay)
    weight_decay: float = 0.01
    warmup_steps: int = 50  # optimizer steps of linear warm-up
    grad_clip: float = 1.0  # max global gradient norm
    modality_weights: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)  # none/text/image/both draw odds
    min_count: int = 2  # words seen fewer times share hash buckets
    n_hash_buckets: int = 64
    goal_dropout: float = 0.0  # chance per example and epoch that the goal is hidden (the memory must tell)
    type_balance: float = 0.0  # action-type loss weights (count / mean count) ** -type_balance (0: unweighted)
    wide_lr_scale: float = 30.0  # the wide type head's learning rate, in multiples of ``lr``
    max_eval_examples: int = 512  # held-out examples scored after each epoch
    model: Mapping[str, Any] = field(default_factory=dict)  # ActorConfig overrides

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise DataError("epochs" if self.epochs < 1 else "batch_size", "must be >= 1")
        if len(self.modality_weights) != 4 or min(self.modality_weights) < 0 or sum(self.modality_weights) <= 0:
            raise DataError("modality_weights",
                            f"need 4 non-negative odds (none, text, image, both), got {self.modality_weights}")


@dataclass
class TrainHistory:
    """Per-epoch training record."""

    train_loss: list[float] = field(default_factory=list)  # mean loss over the epoch's batches
    eval_step_accuracy: list[float] = field(default_factory=list)  # held-out, modality as drawn
    eval_type_accuracy: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # wall time of the epoch (training only)
    examples_per_second: list[float] = field(default_factory=list)
    loss_terms: list[dict[str, float]] = field(default_factory=list)  # epoch means of each loss term

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) for k, v in self.__dict__.items()}


def corpus_texts(examples: Iterable[ActorExample]) -> Iterable[str]:
    """Every text the vocabulary is built from: goals, memory texts, UI labels."""
    for ex in examples:
        yield ex.input.goal
        if ex.input.memory_text:
            yield ex.input.memory_text
        for el in ex.input.elements:
            if el.text:
                yield el.text


def build_vocabulary(examples: Sequence[ActorExample], min_count: int = 2, n_hash_buckets: int = 64) -> Vocabulary:
    """The word vocabulary of a training set, with the special and history tokens."""
    return Vocabulary.build(corpus_texts(examples), extra_tokens=history_tokens(), min_count=min_count,
                            n_hash_buckets=n_hash_buckets)


def draw_modalities(examples: Sequence[ActorExample], feats: Sequence[Features], weights: Sequence[float],
                    rng: np.random.Generator) -> list[Modality]:
    """A modality per example, drawn by ``weights`` among those its memory allows."""
    out: list[Modality] = []
    for f in feats:
        w = np.array([wt if f.has(m) else 0.0 for m, wt in zip(MODALITIES, weights)])
        out.append(MODALITIES[int(rng.choice(4, p=w / w.sum()))] if w.sum() > 0 else "none")
    return out


def without_goal(f: Features, t: Targets) -> tuple[Features, Targets]:
    """The prompt with its goal hidden (no goal tokens) and the labels that still apply (no span)."""
    hidden = replace(f, goal_ids=f.goal_ids[:0], goal="", goal_tokens=())
    return hidden, replace(t, span_start=IGNORE, span_end=IGNORE)


def modality_batches(modalities: Sequence[Modality], batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Shuffled batches of example indices, each of one modality (prompts of alike length pad little)."""
    order = rng.permutation(len(modalities))
    batches = []
    for m in MODALITIES:
        group = order[[modalities[i] == m for i in order]] if len(order) else order
        batches += [group[lo:lo + batch_size] for lo in range(0, len(group), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def train_actor(examples: Sequence[ActorExample], config: TrainConfig, seed: int,
                eval_examples: Sequence[ActorExample] = (), match: MatchConfig = STRICT_MATCH,
                progress: bool = True) -> tuple[MiniActor, TrainHistory]:
    """Behaviour cloning: fit a fresh :class:`GuiActor` to ``examples``; deterministic for ``seed``.

    Each epoch redraws every example's memory modality (``config.modality_weights`` over the
    modalities its memory allows). Held-out steps are scored after every epoch with ``match``.
    """
    if not examples:
        raise DataError("examples", "no training examples")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    vocab = build_vocabulary(examples, config.min_count, config.n_hash_buckets)
    apps = sorted({ex.target.text for ex in examples if ex.target.type == "open_app" and ex.target.text})
    roles = sorted({role_key(el) for ex in examples for el in ex.input.elements})
    model_cfg = ActorConfig(**{**dict(config.model), "vocab_size": len(vocab), "app_names": apps,
                               "widget_roles": roles,
                               "type_class_weights": type_class_weights(examples, config.type_balance)})
    model = GuiActor(model_cfg)
    patcher = ImagePatcher()
    feats = [featurise(ex.input, vocab, model_cfg, patcher)
             for ex in tqdm(examples, desc="featurise", disable=not progress)]
    targets = [targets_for(ex.target, f, model_cfg) for ex, f in zip(examples, feats)]
    held = list(eval_examples)[:config.max_eval_examples]
    held_feats = [featurise(ex.input, vocab, model_cfg, patcher) for ex in held]
    held_modalities = draw_modalities(held, held_feats, config.modality_weights, np.random.default_rng(seed + 1))

    steps_per_epoch = math.ceil(len(examples) / config.batch_size) + len(MODALITIES) - 1  # at most (modality batches)
    total = config.epochs * steps_per_epoch
    # Adam moves a weight by about lr per step, so in a few hundred steps a weight from zero stays
    # near 1: too small for the wide head's logits to express decisions the facts make clear.
    wide = [p for n, p in model.named_parameters() if n.startswith("wide_type_head.")]
    deep = [p for n, p in model.named_parameters() if not n.startswith("wide_type_head.")]
    groups = [{"params": deep}] + ([{"params": wide, "lr": config.lr * config.wide_lr_scale}] if wide else [])
    opt = torch.optim.AdamW(groups, lr=config.lr, weight_decay=config.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _warmup_cosine(config.warmup_steps, total))
    history = TrainHistory()
    bar = tqdm(total=config.epochs * len(examples), desc="train actor", unit="ex", disable=not progress)
    for epoch in range(config.epochs):
        model.train()
        modalities = draw_modalities(examples, feats, config.modality_weights, rng)
        hide = rng.random(len(examples)) < config.goal_dropout  # [n] examples shown without their goal
        t0, losses, terms = time.perf_counter(), [], []
        for idx in modality_batches(modalities, config.batch_size, rng):
            shown = [without_goal(feats[i], targets[i]) if hide[i] else (feats[i], targets[i]) for i in idx]
            batch = collate([f for f, _ in shown], [modalities[i] for i in idx], model_cfg, vocab)
            out = model(**batch, **stack_targets([t for _, t in shown], model_cfg.n_screen_patches))
            opt.zero_grad(set_to_none=True)
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            opt.step()
            sched.step()
            losses.append(float(out.loss.detach()))
            terms.append({k: float(v) for k, v in out.losses.items()})
            bar.update(len(idx))
            bar.set_postfix(epoch=epoch + 1, loss=f"{losses[-1]:.3f}")
        seconds = time.perf_counter() - t0
        history.train_loss.append(float(np.mean(losses)))
        history.seconds.append(seconds)
        history.examples_per_second.append(len(examples) / seconds)
        names = sorted({k for t in terms for k in t})
        history.loss_terms.append({k: float(np.mean([t[k] for t in terms if k in t])) for k in names})
        if held:
            actor = MiniActor(model, vocab)
            scores = score_features(actor, held_feats, held_modalities, [ex.target for ex in held], match)
            history.eval_step_accuracy.append(scores["step_accuracy"])
            history.eval_type_accuracy.append(scores["type_accuracy"])
    bar.close()
    return MiniActor(model.eval(), vocab), history


def type_class_weights(examples: Sequence[ActorExample], balance: float) -> list[float] | None:
    """Per action type, ``(count / mean count) ** -balance`` over the types seen in ``examples``
    (0.5: inverse square root of frequency); unseen types get weight 1. ``None`` when ``balance`` is 0."""
    if balance == 0:
        return None
    counts = np.bincount([ACTION_TYPES.index(ex.target.type) for ex in examples], minlength=len(ACTION_TYPES))
    mean = counts[counts > 0].mean()
    return [float((c / mean) ** -balance) if c else 1.0 for c in counts]


def _warmup_cosine(warmup: int, total: int) -> Callable[[int], float]:
    """Learning-rate multiplier: linear warm-up to 1, then cosine decay to 0.1."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))
    return factor


def score_features(actor: MiniActor, feats: Sequence[Features], modalities: Sequence[Modality],
                   gold: Sequence[Action], match: MatchConfig = STRICT_MATCH) -> dict[str, Any]:
    """:func:`guimem.metrics.step_accuracy` of ``actor`` on featurised prompts (UI boxes from each prompt)."""
    preds: list[Action] = []
    for lo in range(0, len(feats), actor.batch_size):
        hi = lo + actor.batch_size
        preds += [o.action for o in actor.act_features(feats[lo:hi], modalities[lo:hi])]
    if not preds:
        return {"n_steps": 0, "step_accuracy": float("nan"), "type_accuracy": float("nan")}
    return step_accuracy(preds, list(gold), [f.elements for f in feats], match)


def step_hits(actor: MiniActor, examples: Sequence[ActorExample], modality: Modality | Sequence[Modality],
              match: MatchConfig = STRICT_MATCH) -> Any:
    """Per example (``[n]`` bool each): does the actor's action match the demonstrated one, and
    does its type (the class ``match`` compares)? Every example must carry the memory ``modality`` asks for.

    ``modality`` may be a sequence of modalities: then each example is featurised once, and a dict
    maps every modality to its ``(step hits, type hits)`` pair.
    """
    modalities = [modality] if isinstance(modality, str) else list(modality)
    feats = [actor.featurise(ex.input) for ex in examples]
    out = {}
    for m in modalities:
        steps, types = [], []
        for lo in range(0, len(feats), actor.batch_size):
            hi = lo + actor.batch_size
            for o, ex in zip(actor.act_features(feats[lo:hi], [m] * len(feats[lo:hi])), examples[lo:hi]):
                steps.append(action_match(o.action, ex.target, ex.input.elements, match))
                types.append(action_class(o.action, match) == action_class(ex.target, match))
        out[m] = (np.array(steps, dtype=bool), np.array(types, dtype=bool))
    return out[modality] if isinstance(modality, str) else out


def evaluate_actor(actor: MiniActor, examples: Sequence[ActorExample], modality: Modality,
                   match: MatchConfig = STRICT_MATCH) -> dict[str, Any]:
    """Held-out step and type accuracy with every example shown memory as ``modality``.

    Examples whose memory lacks that modality are skipped (``n_steps`` counts those scored).
    """
    feats, gold = [], []
    for ex in examples:
        f = actor.featurise(ex.input)
        if f.has(modality):
            feats.append(f)
            gold.append(ex.target)
    return score_features(actor, feats, [modality] * len(feats), gold, match)

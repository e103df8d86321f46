"""The miniature actor's configuration and the constants its model, features and training share.

:class:`ActorConfig` (a ``transformers`` ``PretrainedConfig``, saved as ``config.json``) fixes the
prompt layout (screen and memory-image sizes, patch size, token budgets), the model's size and
the vocabularies learned from the training data (apps, widget roles). The architecture is
described in :mod:`guimem.actors.mini.model`.
"""

from __future__ import annotations

from typing import Any

from transformers import PretrainedConfig

from guimem.core.data import ACTION_TYPES, DataError
from guimem.core.io import check_number
from guimem.core.policy import HISTORY_LEN

DIRECTIONS: tuple[str, ...] = ("up", "down", "left", "right")
"""Swipe directions: the way the finger moves (``up`` = lift point above touch point)."""
DIRECTION_VECTORS = {"up": (0.0, -1.0), "down": (0.0, 1.0), "left": (-1.0, 0.0), "right": (1.0, 0.0)}

# Segment ids; 0 is padding (its embedding row is fixed at zero and never attended to).
(SEG_PAD, SEG_ELEMENT, SEG_SCREEN, SEG_GOAL, SEG_HISTORY, SEG_MEMORY_TEXT, SEG_MEMORY_IMAGE, SEG_MEMORY_CROP,
 SEG_ACT) = range(9)
SEGMENTS: tuple[str, ...] = ("pad", "element", "screen", "goal", "history", "memory_text", "memory_image",
                             "memory_crop", "act")

N_ROLE_SPECIAL = 2  # role ids: 0 = not an element, 1 = a role not seen in training
ACT_CONTEXT_SLOTS = 2  # the [ACT] token's context: the types of the last and the second-to-last action

# Exact-match codes of a screen patch's label against the goal and the memory text shown.
N_MATCH = 3  # per text: none, some or all of a label's words occur in it
MEMORY_MATCH = 1 + N_MATCH ** 2  # memory-text codes: MEMORY_MATCH (word not in the goal), MEMORY_MATCH + 1 (in it)
N_MATCH_CODES = MEMORY_MATCH + 2
DONE_MATCH = N_MATCH_CODES  # goal-token codes, with done_match only: DONE_MATCH (word not in the history), + 1 (in it)

# Pixel-match codes of an element's crop against each remembered crop of the memory image shown
# (and of each remembered crop against the live elements): per crop slot, unlike / alike / the same.
PIXEL_LEVELS = (0.75, 0.9)  # |cosine| of the normalised grey crops at which a pair is alike, the same
N_PIXEL_LEVELS = len(PIXEL_LEVELS) + 1

IGNORE = -100  # label value for "this head has no target on this example"
VOCAB_FILE = "vocab.json"


EFFECT_TOKENS = ("[H:changed]", "[H:same]")
"""Whether the screen's UI tree changed after a history action (``ActorConfig.history_effect``)."""


def history_tokens(effect: bool = False) -> list[str]:
    """The special tokens that spell an action history: types, 3x3 cells, directions, none, and
    with ``effect`` whether the screen changed after each action."""
    kinds = [f"[H:{t}]" for t in ACTION_TYPES]
    cells = [f"[H:at_{r}_{c}]" for r in range(3) for c in range(3)]
    return kinds + cells + [f"[H:{d}]" for d in DIRECTIONS] + ["[H:-]"] + (list(EFFECT_TOKENS) if effect else [])


MAX_SIDE = 1 << 12  # pixels of a screen or memory image the actor reads: far beyond its 96 x 48
MAX_TOKENS = 1 << 14  # a token budget: far beyond any prompt, and bounded so a batch stays small
MAX_LOSS_WEIGHT = 1e6
# (field, lo, hi) of the config's integers: sizes of the model and the prompt
_INTEGERS: tuple[tuple[str, int, int], ...] = (
    ("vocab_size", 1, 1 << 24), ("hidden_size", 1, 1 << 16), ("num_hidden_layers", 1, 1024),
    ("num_attention_heads", 1, 1 << 16), ("intermediate_size", 1, 1 << 18),
    ("screen_height", 1, MAX_SIDE), ("screen_width", 1, MAX_SIDE), ("memory_image_height", 1, MAX_SIDE),
    ("memory_image_width", 1, MAX_SIDE), ("patch_size", 1, MAX_SIDE), ("max_elements", 1, MAX_TOKENS),
    ("max_element_words", 1, 1024), ("crop_size", 2, 1024), ("max_goal_tokens", 1, MAX_TOKENS),
    ("max_history", 0, MAX_TOKENS), ("max_memory_tokens", 1, MAX_TOKENS), ("max_span_tokens", 1, MAX_TOKENS),
    ("history_words", 0, 64),
)
# (field, lo, hi, lo excluded) of the config's real numbers
_NUMBERS: tuple[tuple[str, float, float, bool], ...] = (
    ("dropout", 0.0, 0.99, False), ("attention_dropout", 0.0, 0.99, False), ("layer_norm_eps", 0.0, 1.0, True),
    ("initializer_range", 0.0, 10.0, False), ("swipe_length", 0.0, 1.0, True),
    ("type_loss_weight", 0.0, MAX_LOSS_WEIGHT, False), ("mimetic_init", -100.0, 100.0, False),
    ("word_init_scale", 0.0, 100.0, False),
)
_FLAGS = ("exact_match", "pixel_match", "role_channel", "act_context", "wide_type_head", "history_effect",
          "done_match", "quoted_spans")


def unique_names(names: Any, field: str, path: str | None = None) -> list[str]:
    """``names`` if it is a list of distinct strings (the classes of a head, in order); else a DataError."""
    if not isinstance(names, list):
        raise DataError(field, f"expected a list of names, got {type(names).__name__}", path)
    seen: set[str] = set()
    for i, name in enumerate(names):
        if not isinstance(name, str):
            raise DataError(f"{field}[{i}]", f"expected a string, got {name!r:.60}", path)
        if name in seen:
            raise DataError(f"{field}[{i}]", f"{name!r:.60} is named twice", path)
        seen.add(name)
    return names


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
    max_elements: int = 40  # UI elements read per screen at most, one token each (the tree's first ones; the rest are cut)
    max_element_words: int = 6  # words of an element's label (text, else accessibility description) kept
    crop_size: int = 16  # an element's pixels: its box cut out of the full-size screenshot, scaled to this square
    max_goal_tokens: int = 32  # goal truncated to this many tokens
    max_history: int = HISTORY_LEN  # last actions shown (2 tokens each, and what history_words and history_effect add)
    history_words: int = 0  # words of what each history action touched (the element's label) or typed (0: none)
    history_effect: bool = False  # each history action says whether the screen's UI tree changed after it
    done_match: bool = False  # goal tokens flag whether their words occur in the history's words (what has been done)
    max_memory_tokens: int = 224  # memory text budget in tokens (covers the p95 SMG block of 3 items; longer ones are cut)
    max_span_tokens: int = 8  # longest text span the type head may decode
    quoted_spans: bool = False  # a decoded span holds no quote mark: a quoted phrase, or words outside the quotes
    swipe_length: float = 0.3  # swipe distance (normalized screen units) from the pointed point
    app_names: list[str] | None = None  # classes of the open_app head, in order
    type_loss_weight: float = 1.0  # weight of the action-type cross-entropy
    type_class_weights: list[float] | None = None  # per-class weights of that cross-entropy (None: all 1)
    mimetic_init: float = 1.0  # query = key projection starts near this x identity (0: plain random init)
    word_init_scale: float = 3.0  # word embeddings start this many times larger than the other embeddings
    exact_match: bool = True  # element tokens flag whether their label's words occur in the goal / memory text
    pixel_match: bool = True  # element tokens flag which remembered crop of the memory image they look like
    widget_roles: list[str] | None = None  # UI-tree roles (with state) an element can carry (set from the training screens)
    role_channel: bool = True  # each element token adds the embedding of its role and state
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
    def history_width(self) -> int:
        """Tokens of one history action at most: type, coarse argument, its words, its effect."""
        return 2 + self.history_words + int(self.history_effect)

    @property
    def n_screen_patches(self) -> int:
        rows, cols = self.screen_grid
        return rows * cols

    def check(self) -> None:
        """Raise :class:`DataError` naming the first field of the wrong type or range, or inconsistent."""
        for name, lo, hi in _INTEGERS:
            check_number(getattr(self, name), name, lo, hi, integer=True)
        for name, lo, hi, open_lo in _NUMBERS:
            value = check_number(getattr(self, name), name, lo, hi)
            if open_lo and value <= lo:
                raise DataError(name, f"must be > {lo}, got {value!r}")
        for name in _FLAGS:
            if not isinstance(getattr(self, name), bool):
                raise DataError(name, f"expected true or false, got {getattr(self, name)!r:.60}")
        for name in ("app_names", "widget_roles"):
            unique_names(getattr(self, name), name)
        weights = self.type_class_weights
        if weights is not None:
            if not isinstance(weights, list) or len(weights) != len(ACTION_TYPES):
                raise DataError("type_class_weights", f"expected one weight per action type ({len(ACTION_TYPES)}), "
                                                      f"got {weights!r:.60}")
            for i, w in enumerate(weights):
                check_number(w, f"type_class_weights[{i}]", 0, MAX_LOSS_WEIGHT)
        for name in ("screen_height", "screen_width", "memory_image_height", "memory_image_width"):
            if getattr(self, name) % self.patch_size:
                raise DataError(name, f"must be a multiple of patch_size={self.patch_size}, got {getattr(self, name)}")
        if self.hidden_size % self.num_attention_heads:
            raise DataError("num_attention_heads", f"must divide hidden_size={self.hidden_size}")
        if self.num_hidden_layers < 1:
            raise DataError("num_hidden_layers", "must be >= 1")
        if self.max_elements < 1:
            raise DataError("max_elements", "must be >= 1")
        if self.crop_size < 2:
            raise DataError("crop_size", "must be >= 2")
        if self.done_match and not self.history_words:
            raise DataError("done_match", "matches the goal against the history's words: needs history_words > 0")

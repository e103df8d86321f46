"""The miniature actor's word-level vocabulary: tokenization with character offsets.

Text (goals, memory blocks, UI labels) is lower-cased and cut into words, numbers and single
punctuation marks. A number keeps its inner separators (``3.5``, ``10:30``, ``0.12``) and is
one token; a quoted string is its quote marks plus the words inside, so a span of goal tokens
maps back to the exact original substring (``"Milk"`` keeps its case) through the offsets.

The vocabulary is built from a training corpus: every word seen at least ``min_count`` times
gets its own id. Rarer and unseen words are not collapsed to a single ``[UNK]``: they fall
into one of ``n_hash_buckets`` ids chosen by a stable hash (CRC-32), so two occurrences of
the same unseen word still get the same embedding and the actor can match a word in its
goal or memory against the same word on screen. Because words below ``min_count`` are hashed
at training time too, those bucket embeddings are trained for exactly that use.

Saved as plain JSON beside the model weights (no pickle), through :mod:`guimem.core.io`.
"""

from __future__ import annotations

import functools
import os
import re
import zlib
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from guimem.core.data import DataError
from guimem.core.io import read_json, write_json

if TYPE_CHECKING:
    import torch

PAD, ACT = "[PAD]", "[ACT]"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, ACT)
"""Always the first ids: ``[PAD]`` = 0 (never attended to), ``[ACT]`` = 1 (the final prompt token)."""

# A number (with inner . , : separators and an optional %), a word (letters, inner apostrophe),
# or any single other non-space character (punctuation, quote marks, symbols).
_TOKEN_RE = re.compile(r"\d+(?:[.,:]\d+)*%?|[^\W\d_]+(?:'[^\W\d_]+)*|[^\w\s]|_")
VOCAB_FORMAT = 1


@dataclass(frozen=True)
class Token:
    """One token of a text and where it came from: ``text[start:end]`` (original case)."""

    word: str  # lower-cased form, the vocabulary key
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """Lower-case ``text`` and cut it into word, number and punctuation tokens with offsets."""
    return [Token(m.group().lower(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def words(text: str) -> list[str]:
    """Just the lower-cased token strings of ``text``."""
    return [t.word for t in tokenize(text)]


def find_span(tokens: Sequence[Token], phrase: str) -> tuple[int, int] | None:
    """First ``(i, j)`` (inclusive) with ``tokens[i..j]`` equal to the tokens of ``phrase``, or None."""
    target = words(phrase)
    if not target:
        return None
    n = len(target)
    seq = [t.word for t in tokens]
    for i in range(len(seq) - n + 1):
        if seq[i:i + n] == target:
            return i, i + n - 1
    return None


def span_text(text: str, tokens: Sequence[Token], i: int, j: int) -> str:
    """The original substring of ``text`` covered by tokens ``i..j`` (inclusive)."""
    return text[tokens[i].start:tokens[j].end]


class Vocabulary:
    """Word -> id, with special tokens first, then corpus words, then hash buckets for the rest."""

    def __init__(self, tokens: Sequence[str], n_hash_buckets: int = 64):
        if tuple(tokens[:len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise DataError("tokens", f"must start with the special tokens {SPECIAL_TOKENS}, got {list(tokens[:2])}")
        if len(set(tokens)) != len(tokens):
            dup = next(t for t, c in Counter(tokens).items() if c > 1)
            raise DataError("tokens", f"duplicate token {dup!r}")
        if n_hash_buckets < 1:
            raise DataError("n_hash_buckets", f"must be >= 1, got {n_hash_buckets}")
        self.tokens: tuple[str, ...] = tuple(tokens)
        self.n_hash_buckets = n_hash_buckets
        self._index = {t: i for i, t in enumerate(self.tokens)}

    @classmethod
    def build(cls, texts: Iterable[str], extra_tokens: Sequence[str] = (), min_count: int = 2,
              n_hash_buckets: int = 64) -> "Vocabulary":
        """A vocabulary of every word seen ``min_count`` times in ``texts``, plus ``extra_tokens``."""
        counts = Counter(w for text in texts for w in words(text))
        extra = [t for t in dict.fromkeys(extra_tokens) if t not in SPECIAL_TOKENS]
        corpus = sorted(w for w, c in counts.items() if c >= min_count and w not in extra and w not in SPECIAL_TOKENS)
        return cls(list(SPECIAL_TOKENS) + extra + corpus, n_hash_buckets)

    @functools.cached_property
    def punctuation_ids(self) -> torch.Tensor:
        """Ids of the named single-character non-alphanumeric tokens (quotes, commas, ...)."""
        import torch  # the actor's dependency; the vocabulary alone (memories count tokens) does not need it

        return torch.tensor([i for i, t in enumerate(self.tokens) if len(t) == 1 and not t.isalnum()], dtype=torch.long)

    def __len__(self) -> int:
        """Number of ids: named tokens plus hash buckets."""
        return len(self.tokens) + self.n_hash_buckets

    def __contains__(self, word: str) -> bool:
        return word in self._index

    def id(self, word: str) -> int:
        """The id of ``word``: its own if in the vocabulary, else its hash bucket."""
        own = self._index.get(word)
        if own is not None:
            return own
        return len(self.tokens) + zlib.crc32(word.encode("utf-8")) % self.n_hash_buckets

    def encode(self, text: str) -> list[int]:
        """Ids of the tokens of ``text``."""
        return [self.id(w) for w in words(text)]

    def to_dict(self) -> dict:
        return {"format": VOCAB_FORMAT, "n_hash_buckets": self.n_hash_buckets, "tokens": list(self.tokens)}

    @classmethod
    def from_dict(cls, d: dict, path: str | None = None) -> "Vocabulary":
        try:
            if not isinstance(d, dict):
                raise DataError("vocabulary", f"expected an object, got {type(d).__name__}")
            fmt = d.get("format")
            if type(fmt) is not int or fmt != VOCAB_FORMAT:  # true and 1.0 equal 1 but are no format
                raise DataError("format", f"expected {VOCAB_FORMAT}, got {fmt!r:.60}")
            tokens, buckets = d.get("tokens"), d.get("n_hash_buckets")
            if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
                raise DataError("tokens", "expected a list of strings")
            if not isinstance(buckets, int) or isinstance(buckets, bool):
                raise DataError("n_hash_buckets", f"expected an integer, got {buckets!r:.60}")
            return cls(tokens, buckets)
        except DataError as err:
            raise err.at(path) from None

    def save(self, path: str | os.PathLike) -> None:
        """Write the vocabulary as JSON, atomically."""
        write_json(path, self.to_dict(), indent=0)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Vocabulary":
        """Read a vocabulary written by :meth:`save`; bad files raise :class:`DataError`."""
        return cls.from_dict(read_json(path), str(path))

"""Text as hashed word tokens with their character offsets, so that a copied span gives exact characters.

Besides its hashed word, each token has a shape (its own case and kind, and what touches it on either side),
the field breaks before it and its column in a separated table: what a copied span's edges read, since hashed
lower-cased words cannot tell `"talk_edited.m4a"` from `edited.m4a` or a quoted name from the sentence after
it. Deterministic, no fitted vocabulary (crc32 buckets)."""

from __future__ import annotations

import dataclasses
import re
import zlib

import numpy as np

TOKEN_RE = re.compile(r"\d+|[^\W\d_]+|[^\s\w]|_")  # digit runs, letter runs, single symbols ("13h" is 13, h)
NON_ALNUM_RE = re.compile(r"[^0-9a-z]+")


def compact(text: str) -> str:
    """Lower-cased letters and digits only: "Wi‑Fi" and "wifi" agree, as do "OpenTracks" and "open tracks"."""
    return NON_ALNUM_RE.sub("", text.lower())


QUOTES = "\"'`\u201c\u201d\u2018\u2019"
N_SIDE, N_KIND = 6, 7  # side: text edge, space, newline, quote, other symbol, letter or digit (glued)
N_SHAPES = N_SIDE * N_KIND * N_SIDE
# A span's end also reads how many field breaks (a line break, a "|" separator, a double quote) lie inside it,
# 0.. MAX_BREAKS (more count as MAX_BREAKS): dot-product keys cannot say "the first break after the start",
# so a title's end, and its row's description's end, both before a line break, looked alike.
MAX_BREAKS = 3
FIELD_SEPARATORS = frozenset("|\t")
BREAKS = FIELD_SEPARATORS | {"\n", '"', "\u201c", "\u201d"}  # double quotes too: a quoted title ends at one
# A token's column in a separated table ("title|description|servings" rows): the field separators before it on
# its line, up to N_COLUMNS - 1 (0 in plain text). Word vectors, shapes and positions alone do not tell a
# row's second value from its third.
N_COLUMNS = 8
EMPTY = np.zeros(0, np.int64)


def _side(c: str) -> int:
    if not c:
        return 0
    if c == "\n":
        return 2
    if c.isspace():
        return 1
    if c in QUOTES:
        return 3
    return 5 if c.isalnum() else 4


def _kind(tok: str) -> int:
    """lower-case word, Capitalised, ALL CAPS, mixed case, digits, a quote, another symbol."""
    if tok.isdigit():
        return 4
    if not tok[0].isalpha():
        return 5 if tok in QUOTES else 6
    if tok.islower():
        return 0
    if tok[0].isupper() and tok[1:].islower():
        return 1
    return 2 if tok.isupper() else 3


def token_shape(text: str, start: int, end: int) -> int:
    """Shape id of the token text[start:end]: (side before, kind, side after), in [0, N_SHAPES)."""
    before = _side(text[start - 1]) if start else 0
    after = _side(text[end]) if end < len(text) else 0
    return (before * N_KIND + _kind(text[start:end])) * N_SIDE + after


_BREAK_CODES = np.array([ord(c) for c in BREAKS], np.uint32)
_SEPARATOR_CODES = np.array([ord(c) for c in FIELD_SEPARATORS], np.uint32)
_BREAK_RE = re.compile("[" + re.escape("".join(sorted(BREAKS))) + "]")


def _breaks_and_columns(text: str, starts: list[int], ends: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """`Tokens.breaks` and `Tokens.columns` of the tokens at these character offsets: a break follows token i
    when a line break, a field separator or a double quote comes before the next token's end; a column counts
    the separators between its line's start and the token."""
    n = len(starts)
    if not _BREAK_RE.search(text):  # plain text (most labels): no breaks, every token in column 0
        return np.zeros(n, np.int64), np.zeros(n, np.int64)
    code = np.frombuffer(text.encode("utf-32-le"), np.uint32)  # one code point each: str offsets index it
    brk = np.concatenate([[0], np.cumsum(np.isin(code, _BREAK_CODES))])
    e = np.array(ends, np.int64)
    breaks = np.concatenate([[0], np.cumsum(brk[e[1:]] - brk[e[:-1]] > 0)])[:n]
    sep = np.concatenate([[0], np.cumsum(np.isin(code, _SEPARATOR_CODES))])
    nl = np.flatnonzero(code == ord("\n"))
    s = np.array(starts, np.int64)
    line_start = np.concatenate([[0], nl + 1])[np.searchsorted(nl, s)]
    return breaks.astype(np.int64), np.minimum(sep[s] - sep[line_start], N_COLUMNS - 1).astype(np.int64)


def find_runs(hay: np.ndarray, needle: np.ndarray) -> list[int]:
    """Every index where `needle` occurs as a contiguous run of `hay` (token ids), ascending."""
    n = len(needle)
    if not n or n > len(hay):
        return []
    hits = np.flatnonzero(hay[: len(hay) - n + 1] == needle[0])
    return [int(i) for i in hits if np.array_equal(hay[i : i + n], needle)]


def bucket(word: str, n: int) -> int:
    """Stable hash bucket of a lower-cased word (crc32: identical across processes and machines)."""
    return zlib.crc32(word.encode("utf-8")) % n


@dataclasses.dataclass
class Tokens:
    """A text's first tokens (hashed) with their character offsets, so a copied span gives exact text."""

    text: str
    ids: np.ndarray  # int64 [S]
    starts: list[int]
    ends: list[int]
    shapes: np.ndarray  # int64 [S]: `token_shape` of each token
    breaks: np.ndarray = dataclasses.field(default_factory=lambda: EMPTY)  # int64 [S]: field breaks before
    # each token (a span s..e holds breaks[e] - breaks[s] of them, see MAX_BREAKS)
    columns: np.ndarray = dataclasses.field(default_factory=lambda: EMPTY)  # int64 [S]: see N_COLUMNS

    def span_text(self, s: int, e: int) -> str:
        return self.text[self.starts[s] : self.ends[e]]

    def spans_for(self, text: str) -> list[tuple[int, int]]:
        """Every token span (s, e) whose character range reproduces `text` exactly."""
        p = self.text.find(text) if text else -1
        if p < 0:  # most labels a candidate search visits hold no match: no offset tables for them
            return []
        start_at = {c: i for i, c in enumerate(self.starts)}
        end_at = {c: i for i, c in enumerate(self.ends)}
        out = []
        while p >= 0:
            s, e = start_at.get(p), end_at.get(p + len(text))
            if s is not None and e is not None and e >= s:
                out.append((s, e))
            p = self.text.find(text, p + 1)
        return out


def tokenize(text: str, limit: int, vocab: int) -> Tokens:
    """The first `limit` tokens of `text`, hashed into `vocab` buckets."""
    ms = list(TOKEN_RE.finditer(text))[:limit]
    starts, ends = [m.start() for m in ms], [m.end() for m in ms]
    return Tokens(text, np.array([bucket(m.group().lower(), vocab) for m in ms], np.int64), starts,
                  ends, np.array([token_shape(text, m.start(), m.end()) for m in ms], np.int64),
                  *_breaks_and_columns(text, starts, ends))

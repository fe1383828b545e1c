"""Helpers shared by the small policy's tests."""

from __future__ import annotations

SYLLABLES = ["ka", "lo", "mi", "ve", "tor", "zu", "pa", "ne", "ri", "sol", "dex", "qua"]  # made-up names


def copied_parts(text: str, field: str | None) -> list[str]:
    """What typed text may have been copied from: itself, a zero-padded digit's digit, or the text around the
    field's current text (a line above or below it)."""
    parts = [text]
    field = field.rstrip("\n") if field else field
    if len(text) == 2 and text[0] == "0" and text[1].isdigit():
        parts.append(text[1])
    if field:
        for sep in ("\n", "\n\n"):
            if text.endswith(sep + field):
                parts.append(text[: -len(field) - len(sep)])
        if text.startswith(field + "\n"):
            parts.append(text[len(field) + 1 :])
    return parts

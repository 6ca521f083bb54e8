"""A frame range as the exports take it: ``"A:B"`` (B exclusive), as a Python slice. Qt-free."""

from __future__ import annotations


def parse_frames(text, n_frames: int) -> tuple[int, int]:
    """``"A:B"`` (B exclusive, either may be empty or negative, as a Python slice) -> (start, stop)."""
    if text is None or text == "":
        return 0, n_frames
    if isinstance(text, tuple):
        a, b = text
    else:
        parts = str(text).split(":")
        if len(parts) != 2:
            raise ValueError(f"frames {text!r}: write A:B (B exclusive), e.g. 0:120, :50 or -30:")
        try:
            a = int(parts[0]) if parts[0].strip() else None
            b = int(parts[1]) if parts[1].strip() else None
        except ValueError:
            raise ValueError(f"frames {text!r}: A and B must be whole numbers") from None
    start, stop, _ = slice(a, b).indices(n_frames)
    if stop <= start:
        raise ValueError(f"frames {text!r} select nothing: this trace has {n_frames} frames (0..{n_frames - 1})")
    return start, stop

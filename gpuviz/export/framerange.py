"""Frame ranges: as the exports take them (``"A:B"``, 0-based, B exclusive, a Python slice) and as the window
numbers frames (from 1, both ends included), which the command line and the window's export dialog read. Qt-free."""

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


def window_frame(number: int | None) -> int | None:
    """A frame number as the window shows it (1 = the first frame; -1 = the last) -> a frame index."""
    if number is None:
        return None
    number = int(number)
    if number == 0:
        raise ValueError("frames are numbered from 1, as in the window (frame 1 / N); -1 is the last")
    return number - 1 if number > 0 else number


def window_frames(text: str | None) -> str | None:
    """A range of frames as the window numbers them, ``A:B`` with both ends included (``:B``, ``A:``,
    negatives from the end) -> the 0-based, end-exclusive slice the exporters take."""
    if text is None or text == "":
        return text
    parts = str(text).split(":")
    if len(parts) != 2:
        raise ValueError(f"frames {text!r}: write A:B (frames A to B as numbered in the window), e.g. 1:120, :50 or -30:")
    try:
        a = int(parts[0]) if parts[0].strip() else None
        b = int(parts[1]) if parts[1].strip() else None
    except ValueError:
        raise ValueError(f"frames {text!r}: A and B must be whole numbers") from None
    if a == 0 or b == 0:
        raise ValueError(f"frames {text!r}: frames are numbered from 1, as in the window; -1 is the last")
    start = "" if a is None else str(a - 1 if a > 0 else a)
    stop = "" if b is None or b == -1 else str(b if b > 0 else b + 1)
    return f"{start}:{stop}"

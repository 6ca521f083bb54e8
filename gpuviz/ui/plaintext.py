"""Text from files (traces, recordings, lessons, timings) shown as text, never as Qt rich text.

Qt renders any string that looks like HTML as HTML in a QLabel (AutoText), a tooltip, a pyqtgraph title
or a legend, so an array named ``<img src=...>`` in a trace would make a view load a local image.
Labels that show file-provided text are set to ``Qt.PlainText``; where a label is rich text on purpose
(bold, colour), every piece that came from a file goes through :func:`esc`.
"""

from __future__ import annotations

import html


def esc(text) -> str:
    """``text`` as HTML that displays it literally (``<`` ``>`` ``&`` and quotes escaped)."""
    return html.escape(str(text), quote=True)


def plain_tooltip(text) -> str:
    """A tooltip that shows ``text`` literally: Qt guesses rich text for tooltips, so make it rich text
    holding the escaped text (``<qt>`` forces the guess; newlines become line breaks)."""
    return "<qt>" + esc(text).replace("\n", "<br>") + "</qt>" if text else ""

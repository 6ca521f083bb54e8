"""The kernel's source, the line(s) executing at this frame lit, and events per line in the margin."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import (QColor, QFont, QFontDatabase, QTextCharFormat, QTextCursor, QTextFormat, QTextLayout,
                           QTextOption)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit
from shiboken6 import isValid

from .base import TraceView, register_view
from .plots import captioned_layout

_GUTTER_SEP = "│ "


def compact_count(n: int) -> str:
    """An event count in at most 5 characters for the margin ("1,024", "65k", "1.2M"): every column the
    margin takes is one fewer of code, and on a 1280-wide screen the code wrapped after 25 characters."""
    if n < 10_000:
        return f"{n:,}"
    for div, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= div:
            v = n / div
            return f"{v:.1f}{unit}" if v < 10 else f"{v:.0f}{unit}"
    return str(n)


#: what the view lays out of a source: a file from a stranger may hold a "source" of megabytes on one line,
#: which a text view takes minutes to lay out; a kernel's source is never near either bound
MAX_SHOWN_LINES = 20_000
MAX_SHOWN_COLUMNS = 1_000


def shown_lines(lines: list[str]) -> list[str]:
    """The source lines as the view shows them: each cut at MAX_SHOWN_COLUMNS, at most MAX_SHOWN_LINES."""
    out = [code if len(code) <= MAX_SHOWN_COLUMNS else
           f"{code[:MAX_SHOWN_COLUMNS]} … ({len(code) - MAX_SHOWN_COLUMNS:,} more characters not shown)"
           for code in lines[:MAX_SHOWN_LINES]]
    if len(lines) > MAX_SHOWN_LINES:
        out.append(f"… ({len(lines) - MAX_SHOWN_LINES:,} more lines not shown)")
    return out


def comment_start(code: str) -> int | None:
    """Where the trailing ``# comment`` of a line of Python starts (the ``#`` outside any string), or None."""
    quote = ""
    i = 0
    while i < len(code):
        c = code[i]
        if quote:
            if c == "\\":
                i += 1  # an escaped character, a quote among them
            elif code.startswith(quote, i):
                i += len(quote) - 1
                quote = ""
        elif c in "'\"":
            quote = code[i:i + 3] if code[i:i + 3] in ("\"\"\"", "'''") else c
            i += len(quote) - 1
        elif c == "#":
            return i
        i += 1
    return None


def source_label(launch) -> str:
    """Where the source shown came from. A GPU recording's path is the recording machine's: its file name,
    said to be the source as recorded (the file on this machine may differ or not exist)."""
    import os

    path = launch.source_file or ""
    if not path or path.startswith("<"):
        return path or "source"
    if launch.backend == "gpu":
        return f"{os.path.basename(path)} as recorded with the trace"
    return path


@register_view
class SourceView(TraceView):
    view_id = "source"
    title = "Kernel source"
    short_title = "Source"
    default_area = "right"
    order = 10

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        layout, self.caption = captioned_layout(self)
        self.editor = QPlainTextEdit(self)
        self.editor.setReadOnly(True)
        self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.editor.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.editor.setUndoRedoEnabled(False)  # the lit line's comment cut and put back at every step (_cut_comment)
        layout.addWidget(self.editor)
        # the code's room changes without the view's (its caption takes another line): the lit line stays in it
        self.editor.viewport().installEventFilter(self)
        self.highlighted: list[int] = []  # absolute source lines lit now: tests read it
        self._selected_thread_line: int | None = None
        self._first_line = 1
        self._n_lines = 0
        self.warning_lines: set[int] = set()  # lines a warning is about (a race, an uninitialised read): marked ⚠
        self._warning_text: dict[int, str] = {}
        #: lit lines whose comment gave way to their code: block number -> (where the cut starts, the text cut off)
        self._cut: dict[int, tuple[int, str]] = {}
        self._cut_width = 0  # the viewport's width the cuts were made at

    def set_warnings(self, warnings: list) -> None:
        """Mark the lines the trace's warnings name (gpuviz.model.analysis.TraceWarning) in the margin."""
        text: dict[int, str] = {}
        for w in warnings:
            for n in w.lines:
                text.setdefault(int(n), w.text)
        if set(text) != self.warning_lines:
            self.warning_lines = set(text)
            self._warning_text = text
            if self.trace is not None:
                self._fill()
                self._apply()

    def on_trace_changed(self) -> None:
        self.warning_lines, self._warning_text = set(), {}
        self._fill()
        self.highlighted = []

    def _fill(self) -> None:
        L = self.trace.launch
        lines = shown_lines(L.source_lines())
        self._first_line = L.first_line
        self._n_lines = len(lines)
        counts = self.frames.line_counts()
        shown = counts if self._with_counts else {}
        width = max([len(compact_count(c)) for c in shown.values()] + [0 if not self._with_counts else 1])
        last = L.first_line + len(lines) - 1
        num_w = len(str(last))
        out = []
        # the warning mark stands apart from the count: '25⚠8,192' read as one number (⚠ is drawn from a
        # fallback font, wider than the code's characters)
        apart = " " if self.warning_lines and width else ""
        for i, code in enumerate(lines):
            n = L.first_line + i
            c = shown.get(n)
            mark = ("⚠" if n in self.warning_lines else " ") + apart
            out.append(f"{n:>{num_w}}{mark}{(compact_count(c) if c else ''):>{width}}{_GUTTER_SEP}{code}")
        self._apart = len(apart)
        self._gutter_len = num_w + 1 + len(apart) + width + len(_GUTTER_SEP)
        # the text typed in takes the cursor's format, which after the last lit line was the margin's grey:
        # every line of a second fill (a new trace, the margin's counts dropped or back) came out grey
        self.editor.setCurrentCharFormat(QTextCharFormat())
        self.editor.setPlainText("\n".join(out))
        self._cut = {}  # every line whole again
        self._fit_wrap()
        self._style_gutter()
        total = sum(counts.values())
        where = source_label(L)
        warned = f" · ⚠ {len(self.warning_lines)} line(s) with a warning (see Details)" if self.warning_lines else ""
        margin = ("events per line in the margin" if self._with_counts
                  else "events per line: see Per line")  # the margin left them out: the code needs the room
        self.caption.setText(f"{where} · {margin} ({total:,} in all){warned}")

    def _style_gutter(self) -> None:
        if not self._n_lines:
            return
        fmt = QTextCharFormat()
        fmt.setForeground(QColor(self.theme.muted))
        doc = self.editor.document()
        cursor = QTextCursor(doc)
        cursor.beginEditBlock()
        for i in range(self._n_lines):
            block = doc.findBlockByNumber(i)
            cursor.setPosition(block.position())
            cursor.setPosition(block.position() + min(self._gutter_len, block.length() - 1), QTextCursor.MoveMode.KeepAnchor)
            cursor.setCharFormat(fmt)
        cursor.endEditBlock()

    #: fewer columns of code than this in the view's width: long lines wrap instead of being cut off
    MIN_COLUMNS = 60
    #: fewer columns of code than this with the event counts in the margin: the margin leaves them out
    COUNTS_MIN_COLUMNS = 34
    _with_counts = True
    _apart = 0

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        self._fit_wrap()

    def _fit_wrap(self) -> None:
        """Wrap long lines when the view is narrower than :data:`MIN_COLUMNS` of code (a projector, a
        laptop): a line cut at the margin hides what it does; on a wide view lines stay one row each."""
        fm = self.editor.fontMetrics()
        all_cols = self.editor.viewport().width() / max(1, fm.horizontalAdvance("0"))
        if self.trace is not None and self._n_lines:
            # the counts cost 5 columns: a projector at 1280 wide wrapped every line after 25 characters of code
            counts_w = max([len(compact_count(c)) for c in self.frames.line_counts().values()] + [1])
            plain_gutter = self._gutter_len - ((counts_w + self._apart) if self._with_counts else 0)
            apart = 1 if self.warning_lines else 0  # the space between a warning mark and the count
            # compact (a crowded lesson scene on a projector): the code has the room, the Per line view the counts
            want = not self.compact and all_cols - plain_gutter - counts_w - apart >= self.COUNTS_MIN_COLUMNS
            if want != self._with_counts:
                self._with_counts = want
                self._fill()
                self._apply()
                return
        cols = all_cols - getattr(self, "_gutter_len", 0)
        mode = (QPlainTextEdit.LineWrapMode.WidgetWidth if cols < self.MIN_COLUMNS
                else QPlainTextEdit.LineWrapMode.NoWrap)
        if self.editor.lineWrapMode() != mode:
            self.editor.setLineWrapMode(mode)
            if self.trace is not None and self.highlighted:
                self._apply()  # wrapping now or no longer: the lit line's comment cut or whole (_cut_comment)

    def compact_changed(self) -> None:
        self._fit_wrap()

    def on_theme_changed(self) -> None:
        t = self.theme
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPixelSize(t.px(17))
        self.editor.setFont(font)
        self._fit_wrap()
        self.editor.setStyleSheet(f"QPlainTextEdit {{ background: {t.background}; color: {t.foreground}; }}")
        if self.trace is not None:
            self._style_gutter()
            self._apply()  # the lit line takes the new theme's colours (not the last theme's pale yellow)

    def on_frame_changed(self) -> None:
        lines = [int(x) for x in self.frames.lines_at(self.frame)]
        if lines == self.highlighted:
            return
        self.highlighted = lines
        self._apply()

    def on_selection_changed(self) -> None:
        pass

    def _apply(self) -> None:
        t = self.theme
        sels = []
        doc = self.editor.document()
        self._put_comments_back()
        self._cut_width = self.editor.viewport().width()
        for n in self.highlighted:
            i = n - self._first_line
            if not 0 <= i < self._n_lines:
                continue
            self._cut_comment(i)
            sel = QTextEdit.ExtraSelection()
            sel.format.setBackground(QColor(t.highlight_line))
            sel.format.setForeground(QColor(t.foreground))
            sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            sel.format.setFontWeight(QFont.Weight.Bold)
            cursor = QTextCursor(doc.findBlockByNumber(i))
            # the whole block selected: a wrapped line is lit on every row it takes, not its first only; and its
            # line break too, or its last row (a one-row line's only row) was lit no further than its text
            at_end = not cursor.movePosition(QTextCursor.MoveOperation.NextBlock, QTextCursor.MoveMode.KeepAnchor)
            if at_end:
                cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
            sel.cursor = cursor
            sels.append(sel)
            if at_end:  # the file's last line has no line break: a cursor on its last row lights that row whole
                row = QTextEdit.ExtraSelection()
                row.format = QTextCharFormat(sel.format)
                row.cursor = QTextCursor(cursor)
                row.cursor.clearSelection()
                sels.append(row)
        self.editor.setExtraSelections(sels)
        if sels:
            cursor = QTextCursor(sels[0].cursor)
            cursor.setPosition(cursor.selectionStart())
            self.editor.setTextCursor(cursor)
            self._keep_lit_line_in_view()

    #: a lit line's comment cut to fewer characters than this (its "# " included) is left out altogether
    MIN_COMMENT_CHARS = 10

    def _cut_comment(self, i: int) -> None:
        """Line ``i`` lit: where its trailing comment would wrap it onto rows its code does not need, the comment is
        cut to what fits on the code's last row (ending in "…"), or left out. Presenting at 1280x720 (~44 columns)
        bank_conflicts' 'dst[col, row] = src[row, col]  # reads along a row (coalesced), writes down a column
        (strided)' took 3 rows for 37 characters of code, and every line under it moved down a row and back at each
        step. The code is never cut; the line is whole again once it is no longer lit (:meth:`_put_comments_back`)."""
        if self.editor.lineWrapMode() == QPlainTextEdit.LineWrapMode.NoWrap:
            return
        block = self.editor.document().findBlockByNumber(i)
        text = block.text()
        at = comment_start(text[self._gutter_len:])
        if at is None:
            return
        code = text[: self._gutter_len + at].rstrip()
        rows = self._rows_of(code)
        if self._rows_of(text) <= rows:
            return
        comment = text[self._gutter_len + at:]
        lo, hi = 0, len(comment) - 1  # the most characters of the comment that keep the line to its code's rows
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._rows_of(f"{code}  {comment[:mid].rstrip()}…") <= rows:
                lo = mid
            else:
                hi = mid - 1
        words = comment[:lo] if lo == len(comment) or comment[lo] == " " else comment[:lo].rpartition(" ")[0]
        words = words if len(words) >= self.MIN_COMMENT_CHARS else comment[:lo]  # at a word's end where one is
        kept = f"  {words.rstrip()}…" if lo >= self.MIN_COMMENT_CHARS else ""
        cursor = QTextCursor(block)
        cursor.setPosition(block.position() + len(code))
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        self._cut[i] = (len(code), cursor.selectedText())
        cursor.insertText(kept)

    def _put_comments_back(self) -> None:
        """The lines :meth:`_cut_comment` cut, whole again."""
        doc = self.editor.document()
        for i, (at, tail) in self._cut.items():
            block = doc.findBlockByNumber(i)
            cursor = QTextCursor(block)
            cursor.setPosition(block.position() + at)
            cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
            cursor.insertText(tail)
        self._cut = {}

    def _rows_of(self, text: str) -> int:
        """The rows ``text`` takes as a line of the editor now (laid out as QPlainTextEdit lays out a line: its
        font, its viewport's width less the document's margins, wrapped at a word or anywhere)."""
        layout = QTextLayout(text, self.editor.font())
        option = QTextOption()
        option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        layout.setTextOption(option)
        width = self.editor.viewport().width() - 2 * self.editor.document().documentMargin()
        layout.beginLayout()
        rows = 0
        while (line := layout.createLine()).isValid():
            line.setLineWidth(width)
            rows += 1
        layout.endLayout()
        return rows

    def _keep_lit_line_in_view(self) -> None:
        """Keep the lit line in view without jumping when it already is: in view means all its rows (a wrapped
        line takes several) with a row of the code around it above and below; else it is brought to the middle,
        where the lines before and after it read too (ensureCursorVisible left it on the bottom edge, its wrapped
        half out of sight, on a projector)."""
        sels = self.editor.extraSelections()
        if sels and not self._in_view(self.editor.document().findBlock(sels[0].cursor.selectionStart())):
            self.editor.centerCursor()

    def eventFilter(self, obj, ev) -> bool:
        if ev.type() == QEvent.Type.Resize and obj is self.editor.viewport() and getattr(self, "highlighted", None):
            self._keep_lit_line_in_view()
            # and once the editor has handled the resize itself: a view shrunk to 100 px (a crowded lesson scene,
            # Ctrl+=) kept its old scroll position, the lit line above the top
            QTimer.singleShot(0, self._lit_line_in_view_later)
        return False

    def _lit_line_in_view_later(self) -> None:
        if not isValid(self) or not self.highlighted:
            return
        if self._cut_width != self.editor.viewport().width():
            self._apply()  # another width: the lit line's comment cut again to it (and the line kept in view)
        else:
            self._keep_lit_line_in_view()

    def _in_view(self, block) -> bool:
        """Whether every row of ``block`` shows, with a row of code above and below it (none past the first or
        the last line of the file)."""
        editor = self.editor
        box = editor.blockBoundingGeometry(block).translated(editor.contentOffset())
        room = editor.fontMetrics().lineSpacing()
        bar = editor.verticalScrollBar()
        above = 0 if bar.value() == bar.minimum() else room
        below = 0 if bar.value() == bar.maximum() else room
        return box.top() >= above and box.bottom() <= editor.viewport().height() - below

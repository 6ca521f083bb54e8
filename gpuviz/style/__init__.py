"""Looks shared by the window and the exported page, without Qt: themes and colours (:mod:`.theme`) and the
layouts and pixel arrays the views draw (:mod:`.render`). numpy and :mod:`gpuviz.model` only, so the HTML
export (:mod:`gpuviz.export.html`) uses them without importing PySide6 or pyqtgraph."""

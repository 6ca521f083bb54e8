"""File > Open a GPU recording…: the GPU recordings shipped with gpuviz, one row each, with device, driver, date and
versions.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout

from .launch import recording_description
from .views.details import versions_text


class RecordingsDialog(QDialog):
    """The GPU recordings shipped with gpuviz, one row each, with device, driver, date and versions."""

    COLUMNS = ("recording", "device", "driver", "date", "versions")

    def __init__(self, recordings, parent=None):
        super().__init__(parent)
        self._describe = recording_description
        self.setWindowTitle("Open a GPU recording")
        self.recordings = list(recordings)
        layout = QVBoxLayout(self)
        intro = QLabel("Traces recorded on a real GPU and shipped with gpuviz. They open as they were captured "
                       "there: the SM each block ran on, the GPU's registers and occupancy. Nothing runs here.", self)
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.table = QTreeWidget(self)
        self.table.setRootIsDecorated(False)
        self.table.setHeaderLabels(list(self.COLUMNS))
        for rec in self.recordings:
            item = QTreeWidgetItem([rec.title, rec.device, rec.driver, rec.date, versions_text(rec.versions)])
            item.setToolTip(0, rec.label)
            self.table.addTopLevelItem(item)
        for c in range(len(self.COLUMNS) - 1):
            self.table.resizeColumnToContents(c)
        layout.addWidget(self.table, 1)
        self.info = QLabel(self)
        self.info.setWordWrap(True)
        self.info.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.info)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.table.currentItemChanged.connect(lambda *_: self._show_info())
        self.table.itemDoubleClicked.connect(lambda *_: self.accept())
        if self.recordings:
            self.table.setCurrentItem(self.table.topLevelItem(0))
        self.resize(1100, 560)

    def rows(self) -> list[list[str]]:
        """What the table shows, row by row (tests read it)."""
        return [[self.table.topLevelItem(i).text(c) for c in range(len(self.COLUMNS))]
                for i in range(self.table.topLevelItemCount())]

    def chosen(self):
        i = self.table.indexOfTopLevelItem(self.table.currentItem()) if self.table.currentItem() else -1
        return self.recordings[i] if 0 <= i < len(self.recordings) else None

    def _show_info(self) -> None:
        rec = self.chosen()
        self.info.setText(self._describe(rec) if rec is not None else "")

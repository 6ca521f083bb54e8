"""Linked selection: the block, warp, thread or array cell a user picked, shared by every view.

Qt-free. A view that is clicked calls one of the ``select_*`` methods; every view observes the
selection and lights what belongs to it. Fields:

    block   linear block id, or None
    warp    warp index in ``block``, or None
    thread  linear thread id in ``block``, or None
    array   array id (index into ``launch.arrays``), or None
    index   flat element index into that array, or None

Selecting a thread also sets its block and warp; selecting a warp sets its block and clears the
thread; selecting a block clears warp and thread. An array cell is independent of the thread fields
(clicking a cell keeps the thread that is selected, so "which thread touched this?" can be asked).

Observers: ``selection.observe(callback)``; ``callback()`` runs after each change (once per change,
however many fields it touched).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class SelectionState:
    block: int | None = None
    warp: int | None = None
    thread: int | None = None
    array: int | None = None
    index: int | None = None

    @property
    def empty(self) -> bool:
        return self == SelectionState()


class Selection:
    def __init__(self, warp_size: int = 32):
        self.warp_size = int(warp_size)
        self._state = SelectionState()
        self._observers: list[Callable[[], None]] = []

    # ---- observers -----------------------------------------------------------------------------
    def observe(self, callback: Callable[[], None]) -> Callable[[], None]:
        self._observers.append(callback)
        return lambda: self._observers.remove(callback) if callback in self._observers else None

    def _set(self, state: SelectionState) -> None:
        if state != self._state:
            self._state = state
            for cb in list(self._observers):
                cb()

    # ---- fields --------------------------------------------------------------------------------
    @property
    def state(self) -> SelectionState:
        return self._state

    @property
    def block(self) -> int | None:
        return self._state.block

    @property
    def warp(self) -> int | None:
        return self._state.warp

    @property
    def thread(self) -> int | None:
        return self._state.thread

    @property
    def array(self) -> int | None:
        return self._state.array

    @property
    def index(self) -> int | None:
        return self._state.index

    @property
    def empty(self) -> bool:
        return self._state.empty

    # ---- commands ------------------------------------------------------------------------------
    def select_block(self, block: int | None) -> None:
        s = self._state
        self._set(SelectionState(None if block is None else int(block), None, None, s.array, s.index))

    def select_warp(self, block: int, warp: int) -> None:
        s = self._state
        self._set(SelectionState(int(block), int(warp), None, s.array, s.index))

    def select_thread(self, block: int, thread: int) -> None:
        s = self._state
        thread = int(thread)
        self._set(SelectionState(int(block), thread // self.warp_size, thread, s.array, s.index))

    def select_cell(self, array: int | None, index: int | None) -> None:
        s = self._state
        if array is None or index is None:
            self._set(SelectionState(s.block, s.warp, s.thread, None, None))
        else:
            self._set(SelectionState(s.block, s.warp, s.thread, int(array), int(index)))

    def clear(self) -> None:
        self._set(SelectionState())

    def __repr__(self) -> str:
        return f"<Selection {self._state}>"

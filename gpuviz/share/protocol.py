"""What the class share's clients and server say to each other, and the polls of the predict questions.

Server to pages (JSON text): ``{"type": "state", "seq", "frame", "scene", "beat", "theme", "selection", "question",
"revealed"}`` after every change of the presenter's frame, lesson scene or beat, selection or theme (``selection``:
the block and thread selected in the window, ``{"block", "thread"}`` with thread null for a block alone, or null;
``question``: the open question,
``{"id", "ask", "kind": "number"}``, or null; ``revealed``: the answers revealed so far, by beat of the page's
lesson, each ``{"answer", "caption"}``), and ``{"type": "reload"}`` when the window shows another trace or lesson.

A page joins at ``/ws?join=TOKEN&seat=SEAT`` (``SEAT``: 24 hex digits its browser keeps; answers count once per
seat, its latest; without a valid seat, once per socket). Pages to server: one kind only, ``{"type": "answer", "question": ID, "value": NUMBER}``. Anything else (not JSON,
not an object, another type, more than :data:`MAX_MESSAGE_BYTES`, more than :data:`RATE_PER_S` a second after a
burst of :data:`BURST`) is a :class:`ProtocolError`, and the server drops that client. A page never steers the
presenter: the server has no message that would, and a message that claims to come from the presenter is refused.

Qt-free (the window's side is :mod:`gpuviz.ui.share`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import threading
import time
from dataclasses import dataclass, field

from ..model.safewrite import replace_atomically

__all__ = ["BURST", "MAX_MESSAGE_BYTES", "RATE_PER_S", "Polls", "ProtocolError", "RateLimit", "parse_client_message",
           "state_message", "write_polls_csv"]

#: the largest message a page may send (an answer is about 60 bytes)
MAX_MESSAGE_BYTES = 4096
#: messages a page may send per second, after a first burst of BURST
RATE_PER_S = 4.0
BURST = 10
#: the largest number an answer may be (a count of sectors, ways, lanes, bytes ...)
MAX_VALUE = 1e12
#: fields only the app's side writes: a page's message naming one claims a role it does not have
_PRESENTER_WORDS = {"presenter", "state", "frame", "scene", "beat", "theme", "reveal", "revealed", "control",
                    "reload"}


class ProtocolError(ValueError):
    """A message the server does not accept: the client that sent it is dropped (the message says why)."""


def parse_client_message(text) -> dict:
    """A page's message, checked: ``{"type": "answer", "question": str, "value": float}``; else ProtocolError."""
    if isinstance(text, (bytes, bytearray)):
        raise ProtocolError("a binary message (pages send JSON text)")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"a message over {MAX_MESSAGE_BYTES} bytes")
    try:
        msg = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ProtocolError(f"not JSON ({e.__class__.__name__})") from None
    if not isinstance(msg, dict):
        raise ProtocolError("not a JSON object")
    kind = msg.get("type")
    if not isinstance(kind, str):
        raise ProtocolError("a message without a type")
    if kind in _PRESENTER_WORDS or _PRESENTER_WORDS & set(msg) or msg.get("role") is not None:
        raise ProtocolError(f"a message that only the presenter's side sends ({str(kind)[:40]!r}): pages only answer")
    if kind != "answer":
        raise ProtocolError(f"an unknown message type {str(kind)[:40]!r}")
    if set(msg) - {"type", "question", "value"}:
        raise ProtocolError("an answer with fields other than type, question and value")
    q, v = msg.get("question"), msg.get("value")
    if not isinstance(q, str) or not 0 < len(q) <= 64:
        raise ProtocolError("an answer without a question id")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or abs(v) > MAX_VALUE:
        raise ProtocolError(f"an answer that is not a number up to {MAX_VALUE:g}")
    return {"type": "answer", "question": q, "value": float(v)}


class RateLimit:
    """A token bucket: ``RATE_PER_S`` messages a second after a burst of ``BURST``; ``allow()`` False = a flood."""

    def __init__(self, rate: float = RATE_PER_S, burst: int = BURST, clock=time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens, self.at = float(burst), clock()

    def allow(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


def state_message(seq: int, frame: int, theme: str, scene: int | None = None, beat: int | None = None,
                  question: dict | None = None, revealed: dict | None = None, selection=None) -> str:
    """The presenter's state as pages receive it (``question`` never holds the answer: see :class:`Polls`;
    ``selection``: ``(block, thread)``, thread None for a block alone, or None)."""
    if selection is not None:
        block, thread = selection
        selection = None if block is None else {"block": int(block), "thread": None if thread is None else int(thread)}
    if question is not None:
        question = {"id": str(question["id"]), "ask": str(question["ask"]), "kind": "number"}
    return json.dumps({"type": "state", "seq": int(seq), "frame": int(frame), "scene": scene, "beat": beat,
                       "theme": theme, "selection": selection, "question": question, "revealed": revealed or {}},
                      separators=(",", ":"), ensure_ascii=False)


def value_text(v: float) -> str:
    """An answer as the distribution counts it: 32.0 -> "32", 0.5 -> "0.5"."""
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


@dataclass
class _Question:
    qid: str
    ask: str
    answers: dict = field(default_factory=dict)  # client id -> value text (the latest answer wins)
    correct: str = ""  # the answer, once revealed (never sent to a page before)


class Polls:
    """The answers of the class, per question, without names: one answer per client (its latest). The server's
    client is a page's seat, the random id its browser keeps, so a reload or a rejoin does not answer twice.

    Thread-safe: the server's thread records, the window's reads."""

    def __init__(self):
        self._lock = threading.Lock()
        self._questions: dict[str, _Question] = {}
        self._open: str | None = None

    def open(self, qid: str, ask: str) -> None:
        """``qid`` takes answers from now on (and no other question does)."""
        with self._lock:
            self._questions.setdefault(qid, _Question(qid, ask))
            self._open = qid

    def close(self, correct: str = "") -> None:
        """No question takes answers; ``correct``: the answer revealed for the one that was open."""
        with self._lock:
            if self._open is not None and correct:
                self._questions[self._open].correct = correct
            self._open = None

    @property
    def open_question(self) -> str | None:
        return self._open

    def record(self, client: str, qid: str, value: float) -> bool:
        """A client's answer; False (not counted) unless ``qid`` is the open question."""
        with self._lock:
            if qid != self._open:
                return False
            self._questions[qid].answers[client] = value_text(value)
            return True

    def counts(self, qid: str | None = None) -> dict:
        """``{"question", "ask", "n", "distribution": {value: count}}`` of ``qid`` (default: the open one, else
        the last asked); the distribution sorted by count, then value."""
        with self._lock:
            qid = qid or self._open or (next(reversed(self._questions)) if self._questions else None)
            q = self._questions.get(qid)
            if q is None:
                return {"question": None, "ask": "", "n": 0, "distribution": {}}
            dist: dict[str, int] = {}
            for v in q.answers.values():
                dist[v] = dist.get(v, 0) + 1
            order = sorted(dist.items(), key=lambda kv: (-kv[1], _num(kv[0])))
            return {"question": qid, "ask": q.ask, "n": len(q.answers), "distribution": dict(order)}

    def questions(self) -> list[str]:
        with self._lock:
            return list(self._questions)

    def to_csv(self) -> str:
        """Every question's distribution as CSV: question id, question, answer, count, share, the answer revealed."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["question_id", "question", "answer", "count", "share", "revealed_answer"])
        for qid in self.questions():
            c = self.counts(qid)
            with self._lock:
                correct = self._questions[qid].correct
            for value, n in c["distribution"].items():
                w.writerow([qid, c["ask"], value, n, f"{n / c['n']:.3f}", correct])
            if not c["distribution"]:
                w.writerow([qid, c["ask"], "", 0, "", correct])
        return out.getvalue()


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.inf


def write_polls_csv(polls: Polls, path) -> None:
    """The poll results as a CSV file (written whole or not at all)."""
    with replace_atomically(path, "poll results") as tmp:
        tmp.write_text(polls.to_csv(), encoding="utf-8")

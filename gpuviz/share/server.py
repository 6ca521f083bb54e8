"""The class share's server: one page and one websocket, on this machine or its LAN address, in its own thread.

    server = ShareServer(lan=False)                      # 127.0.0.1 unless lan=True (then the LAN address)
    server.start(page_builder)                           # page_builder(ws_origin) -> (html, reveals), on a thread
    server.url                                           # http://127.0.0.1:PORT/?join=TOKEN
    server.publish(frame=12, theme="dark", selection=(3, 17), ...)   # never waits for a page
    server.polls.counts()                                # the open question's answers, without names
    server.stop()

Built on the ``websockets`` library (its asyncio server, in a thread with its own event loop). Over HTTP it serves
the current page only, at ``/?join=TOKEN``; the socket is ``/ws?join=TOKEN``; any other path, a missing or wrong
token, another Host (DNS rebinding) or another Origin is refused, and nothing is ever read from the disk.

Each page gets the presenter's latest state, never a queue: a slow page skips the states it had no time for
(latest-state-wins, one sender task per page), and :meth:`publish` only hands the state to the loop. A page whose
socket takes the state at once gets it written there directly, encoded once for all. A page that
sends anything but an answer, too large a message or too many is dropped with a log line
(:mod:`gpuviz.share.protocol`); the others go on. Qt-free.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import secrets
import socket
import threading
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed, InvalidState
from websockets.http11 import Response
from websockets.protocol import State

from .protocol import MAX_MESSAGE_BYTES, Polls, ProtocolError, RateLimit, parse_client_message, state_message

__all__ = ["ShareServer", "lan_address"]

log = logging.getLogger("gpuviz.share")

#: at most this many pages at once (a class, and a margin)
MAX_CLIENTS = 500
#: a page that has not taken its socket's bytes for this long is dropped (its sender stays blocked otherwise)
SEND_TIMEOUT_S = 20.0
#: a state is written straight into a page's socket only while less than this waits in its buffer
WRITE_NOW_BYTES = 16 * 1024


def lan_address() -> str:
    """This machine's address on its LAN: the one its default route leaves from (no packet is sent)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 1))
        addr = s.getsockname()[0]
    except OSError:
        addr = "127.0.0.1"
    finally:
        s.close()
    return addr


#: a page's seat (``/ws?seat=``): the random id its browser keeps, so that a reload or a rejoin answers as the same
#: device; anything else is ignored and the connection answers for itself
_SEAT = re.compile(r"[0-9a-f]{24}")


def _seat(path: str) -> str | None:
    seat = (parse_qs(urlsplit(path).query).get("seat") or [""])[0]
    return seat if _SEAT.fullmatch(seat) else None


class _Client:
    def __init__(self, ws, cid: str, seat: str | None = None):
        self.ws, self.id = ws, cid
        # whom its answers count for: its seat (one answer per device, across reloads and rejoins), else itself.
        # Two sockets with one seat (two tabs of one browser) share one answer, the latest.
        self.voter = f"seat:{seat}" if seat else cid
        self.latest: str | None = None
        self.reload = False  # a new page: sent before any state, never skipped (the state comes after it loads)
        self.ready = asyncio.Event()
        self.sending = False  # its sender is in a send (a state written now would overtake it)
        self.rate = RateLimit()


class ShareServer:
    """One share: a join token, a page, the presenter's state, the polls. Methods are called from any thread."""

    def __init__(self, lan: bool = False, host: str | None = None, port: int = 0):
        self.host = host or (lan_address() if lan else "127.0.0.1")
        self.port = port
        self.token = secrets.token_urlsafe(16)
        self.polls = Polls()
        self.dropped: list[str] = []  # why each dropped page was dropped (tests, the dialog)
        self._clients: dict[str, _Client] = {}
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server = None
        self._started = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._page: asyncio.Future | None = None
        self._builder = None
        self._state: str | None = None
        self._flush_soon = False
        self._seq = 0
        self._reveals_all: dict[int, dict] = {}
        self._revealed: dict[int, dict] = {}
        self._lock = threading.Lock()

    # ---- the app's side ------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/?join={self.token}"

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def n_clients(self) -> int:
        return len(self._clients)

    def start(self, page_builder, timeout: float = 10.0) -> "ShareServer":
        """Bind and serve; ``page_builder(ws_origin) -> (html, reveals)`` runs on a worker thread (the first
        page request waits for it). Raises OSError when the address cannot be bound."""
        self._builder = page_builder
        self._thread = threading.Thread(target=self._run, name="gpuviz-share", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise OSError("the share server did not start")
        if self._error is not None:
            self._thread.join()
            raise OSError(f"could not share on {self.host}: {self._error}") from self._error
        log.info("sharing at %s", self.origin)
        return self

    def set_page(self, page_builder) -> None:
        """Another page (the window shows another trace or lesson): built anew, and every page reloads."""
        self._call(self._new_page, page_builder)

    def publish(self, frame: int, theme: str, scene: int | None = None, beat: int | None = None,
                question: dict | None = None, reveal_beats=(), selection=None) -> None:
        """The presenter's state to every page, now; returns at once. ``reveal_beats``: the page's beats whose
        answers the presenter has revealed (their answers go out with this state, never before); ``selection``:
        the block and thread selected in the window, ``(block, thread)`` (thread None: a block alone) or None."""
        with self._lock:
            for b in reveal_beats:
                if b in self._reveals_all:
                    self._revealed[int(b)] = self._reveals_all[b]
            self._seq += 1
            text = state_message(self._seq, frame, theme, scene, beat, question,
                                 {str(k): v for k, v in self._revealed.items()}, selection)
        self._call(self._broadcast, text)

    def stop(self, timeout: float = 5.0) -> None:
        """Close every page's socket and the server; the thread ends."""
        if self._loop is None or self._thread is None:
            return
        if self._stopping is not None:
            self._call(self._stopping.set)
        self._thread.join(timeout)
        log.info("stopped sharing at %s", self.origin)

    def _call(self, fn, *args) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop closed between the check and the call: the share has stopped
            pass

    # ---- the server's thread -------------------------------------------------------------------------------
    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except OSError as e:
            self._error = e
        finally:
            self._started.set()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        async with serve(self._handler, self.host, self.port, process_request=self._http, max_size=MAX_MESSAGE_BYTES,
                         max_queue=4, write_limit=2 ** 16, ping_interval=20, ping_timeout=20, close_timeout=1,
                         server_header="gpuviz", logger=logging.getLogger("gpuviz.share.websockets")) as server:
            self._server = server
            self.port = server.sockets[0].getsockname()[1]
            self._new_page(self._builder, reload=False)
            self._started.set()
            await self._stopping.wait()
            for c in list(self._clients.values()):
                c.ready.set()
            server.close()
            await server.wait_closed()

    def _new_page(self, builder, reload: bool = True) -> None:
        with self._lock:
            self._revealed = {}
        ws_origin = f"ws://{self.host}:{self.port}"
        self._page = asyncio.ensure_future(asyncio.to_thread(builder, ws_origin))
        self._page.add_done_callback(self._page_built)
        if reload:
            for c in self._clients.values():
                c.reload = True
                c.ready.set()

    def _page_built(self, fut) -> None:
        if fut.cancelled():
            return
        if fut.exception() is not None:
            log.error("the shared page could not be built: %s", fut.exception())
            return
        with self._lock:
            self._reveals_all = dict(fut.result()[1])

    def _refuse(self, status: HTTPStatus, text: str) -> Response:
        return Response(status.value, status.phrase, Headers([("Content-Type", "text/plain; charset=utf-8"),
                                                              ("Cache-Control", "no-store")]), text.encode())

    async def _http(self, connection, request):
        """Every request comes here first: the page, the socket (None: go on with the handshake) or a refusal."""
        url = urlsplit(request.path)
        token = (parse_qs(url.query).get("join") or [""])[0]
        # get_all, never get: a request may repeat a header, and Headers.get raises on a repeated one
        hosts = request.headers.get_all("Host")
        if hosts != [f"{self.host}:{self.port}"]:
            log.warning("refused a request for host %r", ", ".join(hosts)[:100])
            return self._refuse(HTTPStatus.MISDIRECTED_REQUEST, "not this server")
        if url.path not in ("/", "/ws"):
            return self._refuse(HTTPStatus.NOT_FOUND, "not found")
        if not secrets.compare_digest(token.encode(), self.token.encode()):
            log.warning("refused a request without the join token from %s", _peer(connection))
            return self._refuse(HTTPStatus.FORBIDDEN, "this page needs the join link the presenter shows")
        if url.path == "/ws":
            origins = request.headers.get_all("Origin")
            if origins and origins != [self.origin]:
                log.warning("refused a socket from origin %r", ", ".join(origins)[:100])
                return self._refuse(HTTPStatus.FORBIDDEN, "wrong origin")
            if len(self._clients) >= MAX_CLIENTS:
                return self._refuse(HTTPStatus.SERVICE_UNAVAILABLE, "the class is full")
            return None
        if request.headers.get_all("Upgrade"):
            return self._refuse(HTTPStatus.BAD_REQUEST, "the socket is /ws")
        page = self._page
        try:
            html = (await asyncio.shield(page))[0]
        except Exception as e:  # noqa: BLE001 - a page that could not be built is an error page, never a dead server
            return self._refuse(HTTPStatus.INTERNAL_SERVER_ERROR, f"the page could not be built: {e}")
        headers = Headers([("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store"),
                           ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
                           ("X-Frame-Options", "DENY")])
        return Response(200, "OK", headers, html.encode("utf-8"))

    def _broadcast(self, text: str) -> None:
        self._state = text
        if not self._flush_soon:  # the states published before the loop gets to it: only the latest goes out
            self._flush_soon = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_soon = False
        text = self._state
        data = text.encode("utf-8")
        for c in self._clients.values():
            if self._write_now(c, data):
                continue
            c.latest = text  # latest wins: a state the page had no time for is skipped
            c.ready.set()

    @staticmethod
    def _write_now(c: _Client, data: bytes) -> bool:
        """Write the state straight into the page's socket, once encoded for every page, when it takes it at once
        (its sender idle with nothing pending, its socket's buffer nearly empty): no task wakes per page and per
        state, which for 200 pages was most of the server thread's work (the GIL the window waits for). Else
        (False) the page's sender sends it, latest-state-wins."""
        ws = c.ws
        if c.sending or c.reload or c.latest is not None or ws.protocol.state is not State.OPEN or getattr(
                ws, "send_in_progress", None) is not None:
            return False
        transport = ws.transport
        if transport is None or transport.is_closing() or transport.get_write_buffer_size() > WRITE_NOW_BYTES:
            return False
        try:
            ws.protocol.send_text(data)
            ws.send_data()
        except (InvalidState, OSError, RuntimeError):
            return False
        return True

    async def _sender(self, c: _Client) -> None:
        while True:
            await c.ready.wait()
            c.ready.clear()
            if self._stopping.is_set():
                return
            text, c.latest = c.latest, None
            if c.reload:
                c.reload, text = False, '{"type":"reload"}'  # the page reloads, then gets the latest state
            if text is None:
                continue
            c.sending = True
            try:
                # asyncio.timeout, not wait_for: wait_for wraps each send in a task of its own
                async with asyncio.timeout(SEND_TIMEOUT_S):
                    await c.ws.send(text)
            except (ConnectionClosed, TimeoutError):
                await self._drop(c, "its socket stopped taking data", code=1001)
                return
            finally:
                c.sending = False

    async def _drop(self, c: _Client, why: str, code: int = 1008) -> None:
        if self._clients.pop(c.id, None) is not None:
            log.warning("dropped page %s (%s): %s", c.id, _peer(c.ws), why)
            self.dropped.append(why)
        c.ready.set()
        await c.ws.close(code, why[:100])

    async def _handler(self, ws) -> None:
        c = _Client(ws, f"c{next(self._ids)}", _seat(ws.request.path))
        self._clients[c.id] = c
        if self._state is not None:
            c.latest = self._state
            c.ready.set()
        sender = asyncio.ensure_future(self._sender(c))
        try:
            async for text in ws:
                if not c.rate.allow():
                    await self._drop(c, "a flood of messages")
                    break
                try:
                    msg = parse_client_message(text)
                except ProtocolError as e:
                    await self._drop(c, str(e))
                    break
                if not self.polls.record(c.voter, msg["question"], msg["value"]):
                    log.info("page %s answered %r, which is not open", c.id, msg["question"][:64])
        except ConnectionClosed as e:
            too_big = e.rcvd is not None and e.rcvd.code == 1009 or e.sent is not None and e.sent.code == 1009
            if too_big and self._clients.pop(c.id, None) is not None:  # (not when it was dropped already)
                self.dropped.append(f"a message over {MAX_MESSAGE_BYTES} bytes")
                log.warning("dropped page %s (%s): a message over %d bytes", c.id, _peer(ws), MAX_MESSAGE_BYTES)
        finally:
            self._clients.pop(c.id, None)
            c.ready.set()
            sender.cancel()


def _peer(ws) -> str:
    try:
        return "%s:%s" % ws.remote_address[:2]
    except (AttributeError, TypeError):
        return "?"

"""Hostile and broken pages for the class share's server: what tests/test_share_fuzz.py sends at a sharing window
in CI and bench/share_fuzz.py sends by the thousand.

Each fuzz page is one websocket client that joins (or tries to) and then misbehaves in one way, chosen from a seeded
generator so that a failure is replayed by its number: malformed or binary messages, messages over the size limit,
floods, messages that claim the presenter's role or fields, unknown types, answers with impossible values, deep
nesting, unpaired surrogates, sockets without or with a wrong join token, Origin or Host, and plain HTTP requests
for other paths. The server must drop or refuse each, keep the others, log a line and no traceback; none may steer
the presenter.
"""

from __future__ import annotations

import http.client
import json
import random
from dataclasses import dataclass

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.sync.client import connect

#: the kinds of misbehaviour, each a function of (random, server) -> what the page sends, in order
KINDS = ("junk", "binary", "oversized", "flood", "presenter", "unknown", "bad_answer", "deep", "surrogate",
         "no_token", "wrong_token", "wrong_origin", "wrong_host", "http_path")


@dataclass
class Outcome:
    kind: str
    number: int
    dropped: bool = False  # the server closed the socket (or refused the handshake / request)
    refused: bool = False  # the handshake or the HTTP request was refused
    note: str = ""


def _messages(kind: str, rnd: random.Random) -> list:
    if kind == "junk":
        return ["".join(rnd.choice('{}[]":,0123456789abc \\') for _ in range(rnd.randint(1, 200)))]
    if kind == "binary":
        return [bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 300)))]
    if kind == "oversized":
        return [json.dumps({"type": "answer", "question": "q", "value": 1, "pad": "x" * rnd.randint(5000, 200_000)})]
    if kind == "flood":
        return [json.dumps({"type": "answer", "question": "q", "value": i}) for i in range(rnd.randint(40, 300))]
    if kind == "presenter":
        field = rnd.choice(["state", "frame", "scene", "beat", "theme", "reveal", "revealed", "control", "reload"])
        msg = rnd.choice([{"type": field}, {"type": "answer", "question": "q", "value": 1, field: 999},
                          {"type": "state", "frame": rnd.randint(0, 10 ** 6), "theme": "dark", "role": "presenter"},
                          {"type": "answer", "role": "presenter", "question": "q", "value": 2}])
        return [json.dumps(msg)]
    if kind == "unknown":
        return [json.dumps({"type": rnd.choice(["subscribe", "step", "next", "", "ANSWER", 7, None, ["answer"]])})]
    if kind == "bad_answer":
        value = rnd.choice(["4", None, True, [4], {"v": 4}, 1e308, -1e13, 10 ** 40])
        question = rnd.choice(["q", "", "x" * 65, 7, None])
        text = json.dumps({"type": "answer", "question": question, "value": value})
        return [text.replace("1e+308", "Infinity") if rnd.random() < 0.5 else text.replace("1e+308", "NaN")]
    if kind == "deep":
        depth = rnd.randint(500, 2000)
        return ["[" * depth + "]" * depth, '{"type":"answer","question":' + "[" * depth + "]" * depth + "}"]
    if kind == "surrogate":
        return ['{"type":"answer","question":"\\ud800","value":1}', '{"type":"\\udfff"}']
    return []


def _ws_url(server, token: str | None = None, path: str = "/ws") -> str:
    return f"ws://{server.host}:{server.port}{path}?join={server.token if token is None else token}"


def _dropped(ws, timeout: float) -> bool:
    """True once the server closed the socket; False when it is still open after ``timeout``."""
    try:
        while True:
            ws.recv(timeout=timeout)
    except ConnectionClosed:
        return True
    except TimeoutError:
        return False


def misbehave(server, number: int, seed: int = 0, timeout: float = 5.0) -> Outcome:
    """One fuzz page, number ``number`` of the generator ``seed``: joins, misbehaves, reports what the server did."""
    rnd = random.Random(seed * 1_000_003 + number)
    kind = KINDS[rnd.randrange(len(KINDS))]
    out = Outcome(kind, number)
    headers, url = {}, _ws_url(server)
    if kind == "no_token":
        url = f"ws://{server.host}:{server.port}/ws"
    elif kind == "wrong_token":
        url = _ws_url(server, token=server.token[:-1] + ("A" if server.token[-1] != "A" else "B"))
    elif kind == "wrong_origin":
        headers["Origin"] = rnd.choice(["http://evil.example", "null", f"http://{server.host}:{server.port + 1}"])
    elif kind == "wrong_host":
        headers["Host"] = rnd.choice(["evil.example", f"localhost:{server.port}", "127.0.0.1"])
    elif kind == "http_path":
        c = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
        path = rnd.choice(["/etc/passwd", "/../pyproject.toml", "/ws/../", "/?join=", "/favicon.ico",
                           f"/assets?join={server.token}"])
        c.request(rnd.choice(["GET", "POST", "HEAD"]), path)
        status = c.getresponse().status
        c.close()
        out.refused = out.dropped = status != 200
        out.note = f"{path} -> {status}"
        return out
    try:
        ws = connect(url, open_timeout=timeout, additional_headers=headers or None, max_size=None)
    except (InvalidStatus, InvalidHandshake) as e:
        out.refused = out.dropped = True
        out.note = str(e)[:80]
        return out
    with ws:
        try:
            for m in _messages(kind, rnd):
                ws.send(m)
        except ConnectionClosed:
            out.dropped = True
            return out
        out.dropped = _dropped(ws, timeout)
    return out


#: the kinds the server must drop or refuse every time (a bad answer whose JSON happens to parse is still dropped:
#: its value or question is not one the protocol takes)
MUST_DROP = frozenset(KINDS)

"""The class follows live: a local server that gives students' browsers the page of the trace or lesson on the
presenter's screen, keeps them on the presenter's frame (a student may step alone and come back), and collects
their answers to the lesson's predict questions, without names.

- :mod:`.protocol`: the messages, their limits, the polls and their CSV;
- :mod:`.page`: the served page (the HTML export's, without answers, with ``share.js``);
- :mod:`.server`: the ``websockets`` server in its own thread.

Qt-free: the window's side is :mod:`gpuviz.ui.share`.
"""

from .protocol import Polls, ProtocolError, parse_client_message, write_polls_csv
from .server import ShareServer, lan_address

__all__ = ["Polls", "ProtocolError", "ShareServer", "lan_address", "parse_client_message", "write_polls_csv"]

"""``oxidav push``: seed and keep up a server folder from a local tree with the push protocol
(docs/push-protocol.md), as a library (``push_tree``) and a command (``oxidav push``).

A client room: it imports no server room of oxidav, only the protocol's published shape
(what the server advertises in its capabilities) and the same chunker and hash.
"""

from oxidav.push.engine import PushOptions, PushReport, push_tree

__all__ = ["PushOptions", "PushReport", "push_tree"]

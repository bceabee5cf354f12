"""``oxidav push``: seed and keep up a server folder from a local tree with the push protocol
(docs/push-protocol.md), as a library (``push_tree``) and a command (``oxidav push``).

A client room: it imports no server room of oxidav, only the protocol's published shape
(what the server advertises in its capabilities) and the same chunker and hash.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oxidav.push.engine import PushOptions, PushReport, push_tree

__all__ = ["PushOptions", "PushReport", "push_tree"]


def __getattr__(name: str) -> object:
    """The library's names, imported on first use: the ``oxidav`` command line imports this
    package for ``oxidav push``'s options, and ``oxidav serve`` runs through it."""
    if name in __all__:
        from oxidav.push import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

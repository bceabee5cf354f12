"""Which grant questions a WebDAV request asks: the map the authz middleware will use.

A request is allowed when every question it asks is answered "allowed" by the engine. Each
question names an ``Action`` and the resource it is asked on: the request target, the folder
that would receive a new target, the ``Destination`` of COPY/MOVE, or the destination's folder.
Overwriting an existing destination (RFC 4918 §9.8.4, §9.9.3: the destination is deleted
first) also asks ``DELETE`` on it. A MOVE to another name in the same folder is a rename, asked
as ``RENAME`` of the target (Nextcloud's update bit); a MOVE to another folder asks
``MOVE_OUT`` of the target and ``MOVE_IN`` of the destination's folder. A method not listed
here asks ``WRITE`` on its target: unknown methods are treated as writes, never as reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from oxidav.authz.grants.roles import Action


class On(Enum):
    """The resource a question is asked on."""

    TARGET = "target"
    TARGET_PARENT = "target_parent"
    DESTINATION = "destination"
    DESTINATION_PARENT = "destination_parent"


@dataclass(frozen=True, slots=True)
class Question:
    action: Action
    on: On


_READS = {"GET", "HEAD", "OPTIONS", "REPORT"}
_CREATES = {"MKCOL", "MKCALENDAR"}


def questions(
    method: str,
    *,
    target_exists: bool,
    depth: str = "0",
    destination_exists: bool = False,
    same_folder: bool = False,
) -> tuple[Question, ...]:
    """The questions of a ``method`` request; ``depth`` is the Depth header (PROPFIND);
    ``same_folder``: the ``Destination`` is in the target's folder (a rename)."""
    method = method.upper()
    if method in _READS:
        return (Question(Action.READ, On.TARGET),)
    if method == "PROPFIND":
        return (Question(Action.READ if depth == "0" else Action.LIST, On.TARGET),)
    if method in _CREATES or (method in ("PUT", "LOCK") and not target_exists):
        return (Question(Action.CREATE, On.TARGET_PARENT),)  # a new member of the folder
    if method == "MOVE" and same_folder:
        asked = [Question(Action.RENAME, On.TARGET)]
        if destination_exists:
            asked.append(Question(Action.DELETE, On.DESTINATION))
        return tuple(asked)
    if method in ("COPY", "MOVE"):
        source = Action.COPY if method == "COPY" else Action.MOVE_OUT
        arrive = Action.CREATE if method == "COPY" else Action.MOVE_IN
        asked = [Question(source, On.TARGET), Question(arrive, On.DESTINATION_PARENT)]
        if destination_exists:
            asked.append(Question(Action.DELETE, On.DESTINATION))
        return tuple(asked)
    single = {
        "PUT": Action.WRITE,
        "DELETE": Action.DELETE,
        "PROPPATCH": Action.PROPPATCH,
        "LOCK": Action.LOCK,
        "UNLOCK": Action.LOCK,
    }
    return (Question(single.get(method, Action.WRITE), On.TARGET),)

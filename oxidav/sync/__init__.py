"""Generic change log and RFC 6578 sync tokens, shared by calendars and address books.

No HTTP here: a room records each member change with ``record_change`` in the transaction that
makes it, and answers a sync-collection REPORT with ``changes_since``. See ``changelog`` for the
guarantees and ``tokens`` for the token format.
"""

from oxidav.sync.changelog import (
    Change,
    ChangeKind,
    ChangeSet,
    changes_since,
    current_seq,
    current_token,
    drop_collection,
    init_collection,
    record_change,
)
from oxidav.sync.tokens import InvalidSyncToken, SyncToken, parse_token

__all__ = [
    "Change",
    "ChangeKind",
    "ChangeSet",
    "InvalidSyncToken",
    "SyncToken",
    "changes_since",
    "current_seq",
    "current_token",
    "drop_collection",
    "init_collection",
    "parse_token",
    "record_change",
]

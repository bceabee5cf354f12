"""The files provider: every user's file tree over WebDAV (RFC 4918 class 1, 2 and 3).

``FilesProvider`` and ``DbLockStorage`` are the embedders' names (``examples/embed.py``):
``from oxidav.providers.files import FilesProvider, DbLockStorage``.
"""

from oxidav.providers.files.locks import DbLockStorage
from oxidav.providers.files.provider import FilesProvider

__all__ = ["DbLockStorage", "FilesProvider"]

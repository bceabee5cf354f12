"""``DbLockStorage`` at the import path embedders used before the providers had subpackages.

Kept for them (``from oxidav.providers.files_locks import DbLockStorage``); new code imports it
from ``oxidav.providers.files``.
"""

from oxidav.providers.files.locks import DbLockStorage

__all__ = ["DbLockStorage"]

"""The version of oxidav, for ``--version``, backups and status answers."""

__version__ = "0.1.0"

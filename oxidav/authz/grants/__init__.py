"""The grant engine: who may do what on which resource.

``engine`` (``check``, ``filter``, per-request ``RequestAuthz``), ``decision`` and ``audit``,
``roles`` (actions and permission bits), ``store`` (recording grants), ``groups``, ``lookup``
and ``grantset`` (the engine's reads), ``generation`` (the counter that invalidates every
process's cache), ``resources`` and ``targets`` (naming what can be granted), ``reshares``,
``collections`` (shared calendars and address books), ``mounts``, ``mount_names`` and ``views``
(shares as they appear in a recipient's tree).
"""

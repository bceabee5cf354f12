"""Backups of a whole installation: ``oxidav backup DEST`` and ``oxidav restore SRC``.

A backup is a folder: a consistent snapshot of the database (SQLite's online backup API, or
``pg_dump`` of an exported PostgreSQL snapshot), every chunk that snapshot stores outside its
rows (copied as stored, so encrypted chunks stay encrypted), the list of those chunks, and
``backup.json`` — written last, so a folder without it is an unfinished backup that ``restore``
refuses. Chunks are immutable and named by their BLAKE3 hash; a chunk the snapshot references
outlives the copy for at least gc's grace period, so the copy taken after the snapshot is
consistent with it while the server keeps running.
"""

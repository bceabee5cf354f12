"""Nextcloud chunked upload v2: ``/remote.php/dav/uploads/<user>/<transfer id>/<chunk>``
(docs/nextcloud-protocol.md#uploads; server apps/dav/lib/Upload/ChunkingV2Plugin.php).

- ``sessions``: the upload sessions and their chunks as data (no HTTP): create, store a chunk
  (each chunk goes through ``BlobChain.ingest`` as it arrives), list for resume, assemble with
  ``BlobChain.concat`` in numeric chunk order, abort, purge sessions idle for 24 h.
- ``quota``: the chunks count against the uploader's quota from the first one (507 at the
  chunk that crosses; ``OC-Total-Length`` checked up front); the final MOVE charges the tree.
- ``provider``: the WsgiDAV provider mounted at ``/remote.php/dav/uploads``: MKCOL, PUT of a
  chunk, PROPFIND, DELETE, and MOVE of ``.file`` onto the ``Destination`` file.
"""

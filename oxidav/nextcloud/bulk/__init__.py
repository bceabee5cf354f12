"""Nextcloud bulk upload, ``POST /remote.php/dav/bulk`` (docs/nextcloud-protocol.md#uploads).

- ``multipart``: a streaming ``multipart/related`` reader (RFC 2046 §5.1), one part at a time,
  each part's body read exactly by its ``Content-Length``.
- ``endpoint``: the WSGI handler: every part is ingested through the blob chain as it arrives,
  then all files are written with the tree API in one transaction, and the per-path JSON
  reply is sent.
"""

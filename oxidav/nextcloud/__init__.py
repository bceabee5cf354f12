"""Nextcloud compatibility: status/OCS endpoints, PROPFIND enrichment, OC-* headers, chunked and
bulk upload, trashbin, favorites. ``NextcloudMiddleware`` is its entry in the DAV stack."""

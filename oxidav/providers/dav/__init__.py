"""The generic DAV core: collections, REPORTs, writes, XML in and out, sync-collection,
the request server and resolver, PROPFIND enrichment, chunked request bodies. CalDAV,
CardDAV, files and principals build on it; it imports none of them."""

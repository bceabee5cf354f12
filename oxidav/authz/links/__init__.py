"""Public links: the token store, who may use a link and for what, the link middleware
of WebDAV and the ``/s/<token>`` pages."""

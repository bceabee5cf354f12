"""The CardDAV provider (RFC 6352) on the contact store of ``oxidav.contacts``."""

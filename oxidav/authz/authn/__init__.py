"""Authentication: who is asking.

``authenticator`` (the policy: cache, throttles, hashing cap), ``credential_cache``,
``throttle``, ``hashing_gate`` and ``argon2_memory``, ``passwords``, ``accounts``, the one
``principal``, and the WsgiDAV side (``basic_auth``, ``domain_controller``); ``cache`` is the
small TTL cache they share with the grant engine; ``login_refusals`` are the 429s a login gets
instead of a password check.
"""

"""Authentication: who is asking. Credentials, the verified-credential cache, login
throttles, the cap on password hashing, accounts and passwords, and the one ``Principal``."""

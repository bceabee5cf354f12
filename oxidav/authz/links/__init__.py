"""Public links: a token URL onto one file or folder of a user.

``store`` (the tokens and their modes), ``access`` (who may use a link and for what:
passwords, throttles, expiry), ``middleware`` (WebDAV through a link), ``pages`` and ``html``
(the ``/s/<token>`` pages and downloads), ``cli`` (the operator's commands).
"""

"""Embedding oxidav's files provider in your own WSGI application.

A plain WsgiDAV configuration serves each logged-in user's oxidav file tree at ``/dav/``, next
to an ordinary WSGI app at every other path. Storage is oxidav's: a SQLite database (or
PostgreSQL) for the tree, locks and dead properties, and the blob chain for file contents.
Authentication here is WsgiDAV's own ``SimpleDomainController``; the user must also exist in
oxidav's users table, which owns the files.

    python examples/embed.py --data-dir /tmp/embed --port 8090
    curl -u demo:demo -T README.md http://127.0.0.1:8090/dav/README.md
    curl http://127.0.0.1:8090/          # the other app
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cheroot import wsgi
from wsgidav.error_printer import ErrorPrinter
from wsgidav.http_authenticator import HTTPAuthenticator
from wsgidav.request_resolver import RequestResolver
from wsgidav.wsgidav_app import WsgiDAVApp

from oxidav.authz.authn import accounts
from oxidav.blobs import BlobChain
from oxidav.db import Database
from oxidav.db.migrate import upgrade
from oxidav.providers.files import DbLockStorage, FilesProvider
from oxidav.settings import Settings


def hello_app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    """Stands for the application oxidav is embedded in."""
    body = b"Hello from the host application. WebDAV lives at /dav/.\n"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def build_app(data_dir: Path, users: dict[str, str]) -> Any:
    """The combined WSGI app: ``/dav/…`` is WebDAV, everything else is ``hello_app``."""
    data_dir.mkdir(parents=True, exist_ok=True)
    settings = Settings(data_dir=data_dir.absolute())
    db = Database.from_url(settings.resolved_database_url)
    upgrade(db.engine)
    known = {user.username for user in accounts.list_users(db)}
    for name, password in users.items():
        if name not in known:
            accounts.create_user(db, name, password)
    chain = BlobChain.from_settings(settings, db)

    dav = WsgiDAVApp(
        {
            "provider_mapping": {"/dav": FilesProvider(db, chain, user_from="auth")},
            "lock_storage": DbLockStorage(db),
            "property_manager": None,  # dead properties live in oxidav's tables
            "simple_dc": {"user_mapping": {"*": {n: {"password": p} for n, p in users.items()}}},
            "http_authenticator": {
                "accept_basic": True,
                "accept_digest": False,
                "default_to_digest": False,
            },
            "middleware_stack": [ErrorPrinter, HTTPAuthenticator, RequestResolver],
            "dir_browser": {"enable": False},
            "block_size": 256 * 1024,
            "verbose": 1,
            "logging": {"enable": False},
        }
    )

    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/dav" or path.startswith("/dav/"):
            result: Iterable[bytes] = dav(environ, start_response)
            return result
        return hello_app(environ, start_response)

    return app


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("embed-data"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--user", default="demo")
    parser.add_argument("--password", default="demo")
    args = parser.parse_args(argv)
    server = wsgi.Server(
        (args.host, args.port), build_app(args.data_dir, {args.user: args.password}), numthreads=8
    )
    server.prepare()  # binds, so --port 0 resolves to a real port
    host, port = server.bind_addr[:2]
    print(f"serving http://{host}:{port}/ (WebDAV at /dav/)", flush=True)
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

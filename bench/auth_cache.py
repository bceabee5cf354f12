"""Keep-alive PROPFINDs with and without the verified-credential cache.

AFTER (cache on, the default): 1000 authenticated requests on one keep-alive connection must
cost at most 2 argon2 verifications. BEFORE (cache off): every request verifies. Both runs
must answer every request with 207; the run fails unless AFTER serves more requests per second.

    python -m bench auth_cache [--requests 1000] [--uncached-requests 100]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import tempfile
import time
from pathlib import Path

from tests.support.live import in_process_server, make_settings

BODY = (
    b'<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop>'
    b"<d:current-user-principal/></d:prop></d:propfind>"
)


def run(requests: int, cache_seconds: float) -> tuple[float, int]:
    """Return (requests per second, argon2 verifications) for ``requests`` keep-alive PROPFINDs."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = make_settings(
            Path(tmp), f"sqlite:///{tmp}/oxidav.db", auth_cache_seconds=cache_seconds
        )
        with in_process_server(settings, {"alice": "secret"}) as server:
            assert server.services is not None
            auth = server.services.authenticator
            token = base64.b64encode(b"alice:secret").decode()
            headers = {
                "Authorization": f"Basic {token}",
                "Depth": "0",
                "Content-Type": "application/xml",
            }
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            started = time.perf_counter()
            for _ in range(requests):
                conn.request("PROPFIND", "/remote.php/dav/", body=BODY, headers=headers)
                response = conn.getresponse()
                response.read()
                if response.status != 207:
                    raise SystemExit(f"unexpected status {response.status}")
                if response.will_close:
                    raise SystemExit("server closed the keep-alive connection")
            elapsed = time.perf_counter() - started
            conn.close()
            return requests / elapsed, auth.slow_verifications


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench auth_cache")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--uncached-requests", type=int, default=100)
    args = parser.parse_args(argv)

    before_rate, before_verifications = run(args.uncached_requests, cache_seconds=0)
    after_rate, after_verifications = run(args.requests, cache_seconds=60)
    print(
        f"BEFORE (no cache): {args.uncached_requests} requests, {before_rate:.1f} req/s, "
        f"{before_verifications} argon2 verifications"
    )
    print(
        f"AFTER  (cache):    {args.requests} requests, {after_rate:.1f} req/s, "
        f"{after_verifications} argon2 verifications"
    )
    print(f"speed-up: {after_rate / before_rate:.1f}x")
    ok = after_verifications <= 2 and before_verifications == args.uncached_requests
    ok = ok and after_rate > before_rate
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1

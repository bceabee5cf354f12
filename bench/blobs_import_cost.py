"""Gate for lazy imports in the blob package: RSS and import time of a fresh server process.

Each round starts fresh interpreters in rotating order that import ``oxidav.app`` (everything
the server loads before its first request):

* BEFORE: ``cryptography``'s AES-GCM imported first, as ``oxidav.blobs.encrypted`` did at
  module level before it became lazy;
* AFTER: ``oxidav.app`` alone; it must load neither ``cryptography`` nor ``boto3``, and an
  ``EncryptedBlobStore`` made afterwards in the same process must still round-trip a blob.

Reports medians of VmRSS after the imports and of the import wall time; exits 1 unless the
AFTER RSS median is lower.

    python -m bench blobs_import_cost [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_PROBE = """
import json, sys, time
started = time.perf_counter()
{before}import oxidav.app
elapsed = time.perf_counter() - started
rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:"))
loaded = sorted(m for m in ("cryptography", "boto3", "botocore") if m in sys.modules)
import tempfile, blake3
from oxidav.blobs import EncryptedBlobStore, LocalBlobStore
with tempfile.TemporaryDirectory() as tmp:
    store = EncryptedBlobStore(LocalBlobStore(tmp), [bytes(32)])
    store.put(blake3.blake3(b"x").hexdigest(), b"x")
    ok = store.get(blake3.blake3(b"x").hexdigest()) == b"x"
print(json.dumps({{"rss_kib": rss, "seconds": elapsed, "loaded": loaded, "ok": ok}}))
"""

ARMS = {
    "BEFORE eager cryptography": (
        "import cryptography.exceptions, cryptography.hazmat.primitives.ciphers.aead\n"
    ),
    "AFTER lazy": "",
}


def probe(before: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(before=before)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench blobs_import_cost")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    names = list(ARMS)
    rss: dict[str, list[float]] = {name: [] for name in names}
    seconds: dict[str, list[float]] = {name: [] for name in names}
    failures = []
    for i in range(args.rounds):
        for name in names[i % 2 :] + names[: i % 2]:
            result = probe(ARMS[name])
            rss[name].append(float(result["rss_kib"]) / 1024)  # type: ignore[arg-type]
            seconds[name].append(float(result["seconds"]))  # type: ignore[arg-type]
            if not result["ok"]:
                failures.append(f"{name}: the encrypted store did not round-trip")
            if name.startswith("AFTER") and result["loaded"]:
                failures.append(f"{name}: import oxidav.app loaded {result['loaded']}")
    print(f"fresh interpreters importing oxidav.app, {args.rounds} rounds, medians")
    for name in names:
        print(
            f"{name:26} RSS {statistics.median(rss[name]):6.1f} MiB "
            f"(range {min(rss[name]):.1f}-{max(rss[name]):.1f})  import "
            f"{statistics.median(seconds[name]) * 1000:5.0f} ms"
        )
    before, after = (statistics.median(rss[name]) for name in names)
    print(f"AFTER - BEFORE: {after - before:+.1f} MiB")
    if after >= before:
        failures.append("lazy imports did not lower the RSS")
    for failure in sorted(set(failures)):
        print(f"FAIL: {failure}")
    return 1 if failures else 0

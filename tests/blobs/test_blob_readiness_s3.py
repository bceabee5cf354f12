"""/readyz and the blob store metrics of a server whose blobs live in S3 (moto's server over
HTTP), on SQLite and PostgreSQL: ready while the bucket answers, 503 naming the blob store
once it is gone."""

from __future__ import annotations

import json
import time
from pathlib import Path

import boto3

from tests.support.live import in_process_server, make_settings


def test_readyz_and_metrics_on_s3(
    tmp_path: Path, db_url: str, moto_endpoint: str, s3_bucket: str
) -> None:
    url = f"s3://{s3_bucket}/blobs?endpoint_url={moto_endpoint}&region=us-east-1"
    settings = make_settings(tmp_path / "data", db_url, blob_store=url)
    with in_process_server(settings) as server:
        ready = server.request("GET", "/readyz", user=None)
        assert ready.status == 200, ready.body
        content = bytes(range(256)) * 400
        assert server.request("PUT", "/remote.php/dav/files/alice/s.bin", content).status == 201
        scrape = server.request("GET", "/metrics", user=None).text
        puts = [
            line
            for line in scrape.splitlines()
            if line.startswith('oxidav_blob_store_operations_total{op="put_unsynced"}')
            or line.startswith('oxidav_blob_store_operations_total{op="put"}')
        ]
        assert sum(float(line.rsplit(" ", 1)[1]) for line in puts) >= 1, puts

        s3 = boto3.resource("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
        bucket = s3.Bucket(s3_bucket)
        bucket.objects.all().delete()
        bucket.delete()
        deadline = time.monotonic() + 20
        while True:  # the last answer is reused for up to a second
            resp = server.request("GET", "/readyz", user=None)
            if resp.status == 503 or time.monotonic() > deadline:
                break
        assert resp.status == 503
        assert json.loads(resp.body)["checks"] == {"database": "ok", "blob_store": "failed"}

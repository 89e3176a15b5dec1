"""A local S3-compatible server for tests: moto in server mode on 127.0.0.1, in its own process,
with one bucket; ``s3_env`` points the standard AWS variables at it for one test."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

BUCKET = "xamm-test"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def s3():
    """moto's S3 server in its own process (delta-rs calls that hold the GIL would deadlock a server
    thread)."""
    import boto3

    port = _free_port()
    srv = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
    }
    client = boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    )
    for _ in range(100):
        try:
            client.create_bucket(Bucket=BUCKET)
            break
        except Exception:  # the server is still starting
            time.sleep(0.1)
    else:
        srv.kill()
        pytest.fail("the local S3 server did not start")
    yield env, client
    srv.terminate()
    srv.wait(timeout=30)


@pytest.fixture
def s3_env(s3, monkeypatch):
    env, client = s3
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env, client

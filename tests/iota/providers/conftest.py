"""Providers are tested against the fake model server, in every dialect where the behaviour is shared.

Bedrock and Vertex run with stub credentials: AWS keys in the environment (botocore signs with
them), and a Google service-account file with a key made for the test, whose token endpoint is
the fake server's `/token` (google-auth signs its token request and refreshes there for real).
"""

from __future__ import annotations

import functools
import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from iota.providers import _http, _streaming, make_provider
from tests.support.fake_model import FakeModel, fake_model  # noqa: F401  (the fixture)

DIALECTS = ["anthropic", "openai", "bedrock", "vertex"]
AWS_KEYS = {"AWS_ACCESS_KEY_ID": "AKIDFAKEFAKEFAKE", "AWS_SECRET_ACCESS_KEY": "fake/secret/key",
            "AWS_SESSION_TOKEN": "fake-session-token"}
REGIONS = {"bedrock": "us-east-1", "vertex": "us-east5"}
PROJECT = "fake-project"


@pytest.fixture(autouse=True)
def no_retry_pauses(monkeypatch):
    """Retries wait what the server asks (the fake asks 10 ms); the pauses the client picks itself
    are shrunk so the tests stay fast."""
    monkeypatch.setattr(_streaming, "STREAM_RETRY_DELAY", 0.0)
    monkeypatch.setattr(_http, "FIRST_BACKOFF", 0.001)


def url_for(model: FakeModel, dialect: str) -> str:
    return {"openai": model.openai_url, "vertex": model.url + "/v1"}.get(dialect, model.url)


def fake_provider(dialect: str, url: str, **options):
    """A provider of `dialect` at `url`, as the config would make it (key, region, project)."""
    return make_provider("fake", dialect, "test-key", url, region=REGIONS.get(dialect),
                         project_id=PROJECT if dialect == "vertex" else None, **options)


@functools.cache
def private_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


@pytest.fixture
def cloud_credentials(fake_model, monkeypatch, tmp_path):
    """Stub AWS and Google credentials; nothing from the real machine is read."""
    for name in ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in AWS_KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    adc = tmp_path / "google-credentials.json"
    adc.write_text(json.dumps({"type": "service_account", "project_id": "project-of-the-credentials",
                               "private_key_id": "fake-key", "private_key": private_key_pem(),
                               "client_email": "iota-test@fake.iam.gserviceaccount.com", "client_id": "1",
                               "token_uri": fake_model.url + "/token"}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))


@pytest.fixture(params=DIALECTS)
def dialect(request) -> str:
    return request.param


@pytest.fixture
async def open_provider(fake_model, dialect, cloud_credentials):
    """Make providers of the test's dialect pointed at the fake server; closed after the test."""
    providers = []

    def open_(stall_seconds: float = 10.0):
        provider = fake_provider(dialect, url_for(fake_model, dialect), stall_seconds=stall_seconds, connect_seconds=2.0)
        providers.append(provider)
        return provider

    yield open_
    for provider in providers:
        await provider.aclose()

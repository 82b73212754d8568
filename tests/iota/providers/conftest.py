"""Providers are tested against the fake model server, in every dialect where the behaviour is shared.

Bedrock and Vertex run with stub credentials (tests/support/cloud_credentials.py), which
botocore and google-auth read for real.
"""

from __future__ import annotations

import pytest

from iota.providers import _http, _streaming, make_provider
from tests.support.cloud_credentials import UNSET, cloud_environment
from tests.support.fake_model import FakeModel, fake_model  # noqa: F401  (the fixture)

DIALECTS = ["anthropic", "openai", "openresponses", "gemini", "bedrock", "vertex"]
REGIONS = {"bedrock": "us-east-1", "vertex": "us-east5"}
PROJECT = "fake-project"


@pytest.fixture(autouse=True)
def no_retry_pauses(monkeypatch):
    """Retries wait what the server asks (the fake asks 10 ms); the pauses the client picks itself
    are shrunk so the tests stay fast."""
    monkeypatch.setattr(_streaming, "STREAM_RETRY_DELAY", 0.0)
    monkeypatch.setattr(_http, "FIRST_BACKOFF", 0.001)


def url_for(model: FakeModel, dialect: str) -> str:
    return {"openai": model.openai_url, "openresponses": model.openai_url, "vertex": model.url + "/v1"}.get(dialect, model.url)


def fake_provider(dialect: str, url: str, **options):
    """A provider of `dialect` at `url`, as the config would make it (key, region, project)."""
    return make_provider("fake", dialect, "test-key", url, region=REGIONS.get(dialect),
                         project_id=PROJECT if dialect == "vertex" else None, **options)


@pytest.fixture
def cloud_credentials(fake_model, monkeypatch, tmp_path):
    """Stub AWS and Google credentials; nothing from the real machine is read."""
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)
    for name, value in cloud_environment(tmp_path, fake_model.url + "/token").items():
        monkeypatch.setenv(name, value)


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

"""Providers are tested against the fake model server, in both dialects where the behaviour is shared."""

from __future__ import annotations

import pytest

from iota.providers import _http, _streaming, make_provider
from tests.support.fake_model import FakeModel, fake_model  # noqa: F401  (the fixture)


@pytest.fixture(autouse=True)
def no_retry_pauses(monkeypatch):
    """Retries wait what the server asks (the fake asks 10 ms); the pauses the client picks itself
    are shrunk so the tests stay fast. The Anthropic SDK's own backoff is left alone."""
    monkeypatch.setattr(_streaming, "STREAM_RETRY_DELAY", 0.0)
    monkeypatch.setattr(_http, "FIRST_BACKOFF", 0.001)


def url_for(model: FakeModel, dialect: str) -> str:
    return model.url if dialect == "anthropic" else model.openai_url


@pytest.fixture(params=["anthropic", "openai"])
def dialect(request) -> str:
    return request.param


@pytest.fixture
async def open_provider(fake_model, dialect):
    """Make providers of the test's dialect pointed at the fake server; closed after the test."""
    providers = []

    def open_(stall_seconds: float = 10.0):
        provider = make_provider("fake", dialect, "test-key", url_for(fake_model, dialect),
                                 stall_seconds=stall_seconds, connect_seconds=2.0)
        providers.append(provider)
        return provider

    yield open_
    for provider in providers:
        await provider.aclose()

"""The package's own promises: what `make_provider` makes, and that it does not load the SDK."""

from __future__ import annotations

import subprocess
import sys

import pytest

from iota.errors import ConfigError
from iota.providers import make_provider
from iota.providers.anthropic import AnthropicProvider
from iota.providers.openai import OpenAIProvider


def test_make_provider_makes_one_per_type_and_both_report_usage():
    anthropic = make_provider("work", "anthropic", "key", None)
    local = make_provider("local", "openai", "", "http://127.0.0.1:8080/v1/")

    assert isinstance(anthropic, AnthropicProvider) and isinstance(local, OpenAIProvider)
    assert (anthropic.name, local.name) == ("work", "local")
    assert anthropic.reports_usage and local.reports_usage


def test_an_unknown_type_is_a_config_error():
    with pytest.raises(ConfigError, match=r"^providers\.g\.type: unknown provider type 'gemini' \(want anthropic or openai\)$"):
        make_provider("g", "gemini", "key", None)


def test_importing_the_providers_does_not_load_the_anthropic_sdk():
    code = (
        "import sys, iota.providers as p\n"
        "p.make_provider('work', 'anthropic', 'key', None)\n"
        "assert 'anthropic' not in sys.modules, 'anthropic was imported'\n"
        "p.preload_anthropic()\n"
        "assert 'anthropic' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)

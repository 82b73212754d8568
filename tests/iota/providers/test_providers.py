"""The package's own promises: what `make_provider` makes, and what it does not load."""

from __future__ import annotations

import subprocess
import sys

import pytest

from iota.errors import ConfigError, ProviderError
from iota.providers import make_provider, preloader
from iota.providers.anthropic import AnthropicProvider
from iota.providers.cloud import BedrockProvider, VertexProvider
from iota.providers.gemini import GeminiProvider
from iota.providers.openai import OpenAIProvider
from iota.providers.openresponses import OpenResponsesProvider


def test_make_provider_makes_one_per_type_and_all_report_usage():
    made = [make_provider("work", "anthropic", "key", None),
            make_provider("local", "openai", "", "http://127.0.0.1:8080/v1/"),
            make_provider("resp", "openresponses", "key", None),
            make_provider("gem", "gemini", "key", None),
            make_provider("aws", "bedrock", "", None, region="us-east-1"),
            make_provider("gcp", "vertex", "", None, region="us-east5", project_id="p")]

    assert [type(provider) for provider in made] == [AnthropicProvider, OpenAIProvider, OpenResponsesProvider,
                                                     GeminiProvider, BedrockProvider, VertexProvider]
    assert [provider.name for provider in made] == ["work", "local", "resp", "gem", "aws", "gcp"]
    assert all(provider.reports_usage for provider in made)


def test_an_unknown_type_is_a_config_error():
    with pytest.raises(ConfigError, match=r"^providers\.g\.type: unknown provider type 'palm' "
                                          r"\(want anthropic, openai, openresponses, gemini, bedrock, vertex\)$"):
        make_provider("g", "palm", "key", None)


def test_a_vertex_provider_without_a_region_says_which_key_to_set():
    with pytest.raises(ProviderError, match=r"^providers\.gcp\.region: a vertex provider needs its region"):
        make_provider("gcp", "vertex", "", None, project_id="p")


def test_no_provider_loads_the_anthropic_sdk_and_only_the_clouds_have_a_preloader():
    code = (
        "import sys, iota.providers as p\n"
        "for kind in p.PROVIDER_TYPES:\n"
        "    p.make_provider('work', kind, 'key', None, region='r', project_id='p')\n"
        "import iota.providers.anthropic, iota.providers.openai, iota.providers.cloud\n"
        "loaded = [name for name in ('anthropic', 'httpx2', 'botocore', 'google.auth') if name in sys.modules]\n"
        "assert not loaded, f'{loaded} imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert all(preloader(kind) is None for kind in ("anthropic", "openai", "openresponses", "gemini"))
    assert preloader("bedrock") is not None and preloader("vertex") is not None

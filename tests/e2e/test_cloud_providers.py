"""Bedrock and Vertex from the config to the wire: a real `iota run -m` with stub credentials."""

from __future__ import annotations

import subprocess

import pytest

from tests.e2e.conftest import IOTA
from tests.support.cloud_credentials import UNSET, cloud_environment

CONFIG = """\
providers:
  aws: {{type: bedrock, region: eu-west-3, url: '{url}'}}
  gcp: {{type: vertex, region: us-east5, project_id: my-project, url: '{url}/v1'}}
models:
  b: {{provider: aws, id: anthropic.claude-test-v1:0}}
  v: {{provider: gcp, id: claude-test@20260101}}
agents:
  default: {{model: b}}
"""


@pytest.fixture
def cloud_iota(iota, tmp_path):
    (iota.home / ".iota.yaml").write_text(CONFIG.format(url=iota.model.url))
    environment = iota.env(**cloud_environment(tmp_path, iota.model.url + "/token"))
    for name in UNSET:
        environment.pop(name, None)
    return lambda *args: subprocess.run([IOTA, *args], cwd=iota.cwd, env=environment, capture_output=True, text=True,
                                        timeout=30)


def test_a_headless_turn_on_bedrock_and_on_vertex(cloud_iota, fake_model):
    fake_model.reply("Hello from Bedrock.")
    fake_model.reply("Hello from Vertex.")

    bedrock, vertex = cloud_iota("run", "-m", "hi"), cloud_iota("run", "-M", "v", "-m", "hi")

    assert (bedrock.returncode, bedrock.stdout, vertex.returncode, vertex.stdout) == (
        0, "Hello from Bedrock.\n", 0, "Hello from Vertex.\n"), bedrock.stderr + vertex.stderr
    to_bedrock, to_vertex = fake_model.requests
    assert to_bedrock.path == "/model/anthropic.claude-test-v1:0/invoke-with-response-stream"
    assert "/eu-west-3/bedrock/aws4_request" in to_bedrock.headers["authorization"]
    assert to_vertex.path == ("/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/"
                              "claude-test@20260101:streamRawPredict")
    assert to_vertex.headers["authorization"] == "Bearer fake-token-1"


def test_list_providers_says_where_the_cloud_credentials_come_from(cloud_iota, fake_model):
    url = fake_model.url
    assert cloud_iota("list", "providers").stdout == (
        f"Providers:\n  aws  bedrock · {url} · AWS credentials from the environment\n"
        f"  gcp  vertex · {url}/v1 · Google default credentials\n")

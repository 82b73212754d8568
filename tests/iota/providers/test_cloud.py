"""Bedrock and Vertex: their requests as the fake server receives them, and their credentials.

What they share with Anthropic's own endpoint (streaming, retries, faults) runs in
test_streaming.py in every dialect."""

from __future__ import annotations

import sys

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from iota.errors import ProviderError
from iota.messages import Message
from iota.providers import Request
from iota.providers._streaming import error_detail
from iota.providers.anthropic import API_VERSION
from tests.iota.providers.conftest import PROJECT, fake_provider, url_for
from tests.iota.providers.test_anthropic import READ, conversation
from tests.support.cloud_credentials import AWS_KEYS, CREDENTIALS_PROJECT

ANTHROPIC_MESSAGES = [  # conversation() in Anthropic's wire form, as test_anthropic checks it
    {"role": "user", "content": [{"type": "text", "text": "Read a.txt please"}]},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}},
        {"type": "tool_use", "id": "toolu_2", "name": "ls", "input": {}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hello"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such dir", "is_error": True},
        {"type": "text", "text": "Resumed after 3 hours (last activity 2026-09-29 18:04)"},
    ]},
    {"role": "assistant", "content": [{"type": "text", "text": "a.txt says hello."}]},
    {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
]


def request(model: str) -> Request:
    return Request(model, "Be brief.", conversation(), tools=[READ], max_tokens=1000, temperature=0.2, effort="high")


def verify_signature(sent, region: str) -> None:
    """Sign the recorded request again with the stub keys, over exactly the headers it says it
    signed and the bytes the server received, and compare: AWS would refuse anything else."""
    authorization = sent.headers["authorization"]
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    copy = AWSRequest("POST", f"http://{sent.headers['host']}{sent.path}", data=sent.raw_body,
                      headers={name: sent.headers[name] for name in signed})
    copy.context["timestamp"] = sent.headers["x-amz-date"]
    signer = SigV4Auth(Credentials(AWS_KEYS["AWS_ACCESS_KEY_ID"], AWS_KEYS["AWS_SECRET_ACCESS_KEY"],
                                   AWS_KEYS["AWS_SESSION_TOKEN"]), "bedrock", region)
    expected = signer.signature(signer.string_to_sign(copy, signer.canonical_request(copy)), copy)
    assert authorization.endswith(f"Signature={expected}")
    assert f"Credential={AWS_KEYS['AWS_ACCESS_KEY_ID']}/{sent.headers['x-amz-date'][:8]}/{region}/bedrock/aws4_request" in authorization


async def test_bedrock_posts_the_model_in_the_path_and_signs_the_exact_body(fake_model, cloud_credentials):
    fake_model.reply("ok")
    provider = fake_provider("bedrock", url_for(fake_model, "bedrock"))

    reply = await provider.stream(request("anthropic.claude-test-v1:0"), lambda text: None)
    await provider.aclose()

    (sent,) = fake_model.requests
    assert reply.text == "ok"
    assert sent.path == "/model/anthropic.claude-test-v1:0/invoke-with-response-stream"
    assert sent.headers["x-amz-security-token"] == AWS_KEYS["AWS_SESSION_TOKEN"]
    verify_signature(sent, "us-east-1")
    body = sent.body
    assert "model" not in body and "stream" not in body and body["anthropic_version"] == API_VERSION
    assert body["system"] == "Be brief." and body["max_tokens"] == 1000 and body["temperature"] == 0.2
    assert body["output_config"] == {"effort": "high"} and body["cache_control"] == {"type": "ephemeral"}
    assert body["messages"] == ANTHROPIC_MESSAGES


async def test_bedrock_takes_its_region_from_the_aws_environment(fake_model, cloud_credentials, monkeypatch):
    from iota.providers.cloud import BedrockProvider

    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    fake_model.reply("ok")
    provider = BedrockProvider("fake", url_for(fake_model, "bedrock"))  # no region configured

    await provider.stream(request("m"), lambda text: None)
    await provider.aclose()

    verify_signature(fake_model.requests[0], "eu-west-3")


async def test_bedrock_without_a_region_or_credentials_says_what_to_set(fake_model, cloud_credentials, monkeypatch):
    from iota.providers.cloud import BedrockProvider

    with pytest.raises(ProviderError, match=r"^providers\.fake\.region: no AWS region: set region in the config or AWS_REGION$"):
        await BedrockProvider("fake", fake_model.url).stream(request("m"), lambda text: None)

    for name in AWS_KEYS:
        monkeypatch.delenv(name)
    with pytest.raises(ProviderError, match=r"^fake: no AWS credentials found \(check the AWS credentials"):
        await BedrockProvider("fake", fake_model.url, region="us-east-1").stream(request("m"), lambda text: None)
    assert fake_model.requests == []


async def test_a_cloud_provider_without_its_library_says_which_extra_to_install(fake_model, cloud_credentials, monkeypatch):
    monkeypatch.setitem(sys.modules, "botocore.session", None)  # what a missing module looks like to import
    monkeypatch.setitem(sys.modules, "google.auth", None)

    with pytest.raises(ProviderError, match=r"^fake: a bedrock provider needs botocore: pip install 'iota\[bedrock\]'$"):
        await fake_provider("bedrock", fake_model.url).stream(request("m"), lambda text: None)
    with pytest.raises(ProviderError, match=r"^fake: a vertex provider needs google-auth: pip install 'iota\[vertex\]'$"):
        await fake_provider("vertex", fake_model.url).stream(request("m"), lambda text: None)


async def test_vertex_posts_to_the_projects_model_with_a_google_token(fake_model, cloud_credentials):
    fake_model.reply("ok")
    provider = fake_provider("vertex", url_for(fake_model, "vertex"))

    reply = await provider.stream(request("claude-test@20260101"), lambda text: None)
    await provider.aclose()

    (sent,) = fake_model.requests
    assert reply.text == "ok"
    assert sent.path == f"/v1/projects/{PROJECT}/locations/us-east5/publishers/anthropic/models/claude-test@20260101:streamRawPredict"
    assert sent.headers["authorization"] == "Bearer fake-token-1"
    # google-auth asked the credential file's token endpoint, with a JWT signed by its key.
    (token_request,) = fake_model.token_requests
    assert "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer" in token_request
    body = sent.body
    assert "model" not in body and body["stream"] is True and body["anthropic_version"] == API_VERSION
    assert body["messages"] == ANTHROPIC_MESSAGES


async def test_vertex_reuses_its_token_until_it_expires(fake_model, cloud_credentials):
    async def two_requests() -> None:
        provider = fake_provider("vertex", url_for(fake_model, "vertex"))
        for _ in range(2):
            fake_model.reply("ok")
            await provider.stream(request("m"), lambda text: None)
        await provider.aclose()

    await two_requests()
    fake_model.token_lifetime = 1  # google-auth counts a token this close to its end as expired
    await two_requests()

    tokens = [sent.headers["authorization"] for sent in fake_model.requests]
    assert tokens == ["Bearer fake-token-1", "Bearer fake-token-1", "Bearer fake-token-2", "Bearer fake-token-3"]


async def test_vertex_takes_the_project_of_its_credentials_when_none_is_configured(fake_model, cloud_credentials):
    from iota.providers.cloud import VertexProvider

    fake_model.reply("ok")
    provider = VertexProvider("fake", url_for(fake_model, "vertex"), region="global")

    await provider.stream(request("m"), lambda text: None)
    await provider.aclose()

    assert fake_model.requests[0].path.startswith(f"/v1/projects/{CREDENTIALS_PROJECT}/locations/global/")


def test_google_shaped_errors_name_their_status():
    body = {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}

    assert error_detail(body) == ("RESOURCE_EXHAUSTED", "Quota exceeded")


async def test_bedrock_errors_are_read_from_bedrocks_shape(fake_model, cloud_credentials):
    fake_model.fail(403, error_type="AccessDeniedException", message="You don't have access to the model")
    provider = fake_provider("bedrock", fake_model.url)

    with pytest.raises(ProviderError) as caught:
        await provider.stream(Request("m", "", [Message("user", "hi")]), lambda text: None)
    await provider.aclose()

    assert str(caught.value).startswith("fake: HTTP 403 AccessDeniedException: You don't have access to the model (check the AWS")


async def test_aws_credentials_that_cannot_be_used_are_a_one_line_error(fake_model, cloud_credentials, monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")

    with pytest.raises(ProviderError, match=r"^fake: the AWS credentials cannot be used \(The config profile "
                                            r"\(no-such-profile\) could not be found; check the AWS credentials"):
        await fake_provider("bedrock", fake_model.url).stream(request("m"), lambda text: None)

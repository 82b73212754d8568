"""Anthropic's Messages API on Amazon Bedrock and Google Vertex AI.

Both serve the same request and the same events as Anthropic's own endpoint (see `anthropic`),
with three differences each: the model goes in the URL, not the body, and the body names the API
version (`anthropic_version`); the credentials are the cloud's own; and Bedrock frames the events
in AWS's binary event stream instead of server-sent events.

    Bedrock  POST {url}/model/{model}/invoke-with-response-stream   (no `stream` in the body)
             signed with AWS Signature V4 (service `bedrock`) from the AWS credentials the
             environment provides: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
             (/ AWS_SESSION_TOKEN), AWS_PROFILE, SSO, an instance role — botocore's chain.
             The reply: event-stream messages whose payload is {"bytes": base64 of one event's
             JSON}; an `exception` message is an error inside the stream.
    Vertex   POST {url}/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:streamRawPredict
             with `Authorization: Bearer` and a token from Google's application default
             credentials (`gcloud auth application-default login`, GOOGLE_APPLICATION_CREDENTIALS,
             the metadata server), refreshed when it expires.

That is what the official SDK's `AnthropicBedrock` and `AnthropicVertex` send; the SDK does the
signing and the token through botocore and google-auth, so this module uses those two directly
(the `bedrock` and `vertex` extras) and never imports the SDK. They load on a provider's first
request, in a worker thread: botocore takes a good fraction of a second to import, and finding
credentials may read files or ask a metadata server.
"""

from __future__ import annotations

import base64
import json
import os
from contextlib import contextmanager
from typing import Any, Iterator
from urllib.parse import quote

import httpx
import trio

from iota.errors import ProviderError, ProviderRejected
from iota.providers._http import response_body
from iota.providers._streaming import body_failure, http_failure, one_line, unreadable
from iota.providers.anthropic import API_VERSION, MessagesProvider, StreamReading, request_fields
from iota.providers.base import OnText, Reply, Request, Timeouts

GOOGLE_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def _missing(provider: str, kind: str, library: str) -> ProviderError:
    return ProviderError(f"{provider}: a {kind} provider needs {library}: pip install 'iota[{kind}]'")


class _CloudProvider(MessagesProvider):
    """What Bedrock and Vertex share: credentials loaded on the first request, the model in the URL."""

    def __init__(self, name: str, base_url: str | None, timeouts: Timeouts):
        super().__init__(name, timeouts)
        self._base_url = base_url.rstrip("/") if base_url else None
        self._ready = False

    async def stream(self, request: Request, on_text: OnText) -> Reply:
        if not self._ready:
            # Abandoned on cancel: a Ctrl+C does not wait for a slow metadata server.
            await trio.to_thread.run_sync(self._load_credentials, abandon_on_cancel=True)
            self._ready = True
        return await super().stream(request, on_text)

    def _load_credentials(self) -> None:
        """Find the credentials (blocking: runs in a worker thread)."""
        raise NotImplementedError

    def fields(self, request: Request) -> dict[str, Any]:
        return {"anthropic_version": API_VERSION} | {k: v for k, v in request_fields(request).items() if k != "model"}


class BedrockProvider(_CloudProvider):
    def __init__(self, name: str, base_url: str | None = None, *, region: str | None = None,
                 timeouts: Timeouts = Timeouts()):
        super().__init__(name, base_url, timeouts)
        self._region = region
        self._credentials: Any = None

    def _load_credentials(self) -> None:
        try:
            import botocore.session
        except ImportError:
            raise _missing(self.name, "bedrock", "botocore") from None
        with self._aws_errors():
            session = botocore.session.get_session()
            # The region as the SDK looks for it: AWS_REGION, then botocore's (AWS_DEFAULT_REGION, the profile).
            self._region = self._region or os.environ.get("AWS_REGION") or session.get_config_variable("region")
            if not self._region:
                raise ProviderError(f"providers.{self.name}.region: no AWS region: set region in the config or AWS_REGION")
            self._credentials = session.get_credentials()
        if self._credentials is None:
            raise ProviderError(f"{self.name}: no AWS credentials found ({self.credentials_hint()})")

    def encode(self, request: Request) -> tuple[str, bytes]:
        base = self._base_url or f"https://bedrock-runtime.{self._region}.amazonaws.com"
        return f"{base}/model/{quote(request.model, safe=':;')}/invoke-with-response-stream", self.body(self.fields(request), request)

    async def headers(self, url: str, body: bytes) -> dict[str, str]:
        # Refreshable credentials (SSO, a role) may fetch new keys while signing: a worker thread.
        return await trio.to_thread.run_sync(self._sign, url, body)

    def _sign(self, url: str, body: bytes) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        signed = AWSRequest("POST", url, headers={"content-type": "application/json", "accept": "application/json"},
                            data=body)
        with self._aws_errors():
            SigV4Auth(self._credentials, "bedrock", self._region).add_auth(signed)
        return dict(signed.headers.items())

    @contextmanager
    def _aws_errors(self) -> Iterator[None]:
        """botocore's failures (a missing profile, an SSO login that expired) as one-line errors."""
        from botocore.exceptions import BotoCoreError

        try:
            yield
        except BotoCoreError as err:
            raise ProviderError(f"{self.name}: the AWS credentials cannot be used ({one_line(str(err))}; "
                                f"{self.credentials_hint()})") from None

    def credentials_hint(self) -> str:
        return "check the AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"

    def rejected(self, response: httpx.Response) -> ProviderError:
        # Bedrock's errors are {"message": …} with the kind in a header (`ValidationException:…`):
        # put them in Anthropic's shape, where a too-long prompt is recognised.
        body = response_body(response)
        message = body.get("message") if isinstance(body, dict) else body
        kind = response.headers.get("x-amzn-errortype", "error").partition(":")[0]
        shaped = {"type": "error", "error": {"type": kind, "message": str(message or "")}}
        return http_failure(self.name, response.status_code, shaped, self.credentials_hint())

    async def read(self, response: httpx.Response, deliver: OnText) -> Reply:
        from botocore.eventstream import EventStreamBuffer, ParserError

        reading = StreamReading(self.name, deliver)
        frames = EventStreamBuffer()
        try:
            async for data in response.aiter_bytes():
                frames.add_data(data)
                for frame in frames:
                    reading.take(*_bedrock_event(frame.headers, frame.payload))
        except httpx.TransportError as err:
            raise body_failure(self.name, err) from err
        except (ParserError, ValueError, TypeError) as err:
            raise unreadable(self.name, err) from err
        return reading.reply()


def _bedrock_event(headers: dict[str, Any], payload: bytes) -> tuple[str | None, str]:
    """One event-stream message as the (name, data) of the event it carries."""
    kind = headers.get(":message-type")
    if kind == "exception":
        message = json.loads(payload or b"{}").get("message", "")
        return "error", json.dumps({"type": "error", "error": {"type": headers.get(":exception-type"), "message": message}})
    if kind == "error":
        error = {"type": headers.get(":error-code"), "message": headers.get(":error-message", "")}
        return "error", json.dumps({"type": "error", "error": error})
    if headers.get(":event-type") != "chunk":
        return None, ""
    data = base64.b64decode(json.loads(payload)["bytes"]).decode()
    return json.loads(data).get("type"), data


class VertexProvider(_CloudProvider):
    def __init__(self, name: str, base_url: str | None = None, *, region: str | None = None,
                 project_id: str | None = None, timeouts: Timeouts = Timeouts()):
        if not region:
            raise ProviderError(f"providers.{name}.region: a vertex provider needs its region (e.g. us-east5 or global)")
        super().__init__(name, base_url, timeouts)
        self._region = region
        self._project_id = project_id
        self._credentials: Any = None

    def _load_credentials(self) -> None:
        try:
            import google.auth
            import google.auth.exceptions
        except ImportError:
            raise _missing(self.name, "vertex", "google-auth") from None
        try:
            self._credentials, project_id = google.auth.default(scopes=[GOOGLE_SCOPE])
        except google.auth.exceptions.GoogleAuthError as err:
            raise ProviderError(f"{self.name}: no Google credentials ({one_line(str(err))})") from None
        self._project_id = self._project_id or project_id
        if not self._project_id:
            raise ProviderError(f"providers.{self.name}.project_id: no Google Cloud project: set project_id in the config")

    def encode(self, request: Request) -> tuple[str, bytes]:
        region = self._region
        base = self._base_url or ("https://aiplatform.googleapis.com/v1" if region == "global" else
                                  f"https://{region}-aiplatform.googleapis.com/v1")
        path = f"/projects/{quote(self._project_id)}/locations/{quote(region)}/publishers/anthropic/models/{quote(request.model, safe='@')}"
        return f"{base}{path}:streamRawPredict", self.body(self.fields(request) | {"stream": True}, request)

    async def headers(self, url: str, body: bytes) -> dict[str, str]:
        if not self._credentials.valid:  # no token yet, or it expires within the library's margin
            await trio.to_thread.run_sync(self._refresh, abandon_on_cancel=True)
        return {"authorization": f"Bearer {self._credentials.token}", "content-type": "application/json",
                "accept": "application/json"}

    def _refresh(self) -> None:
        import google.auth.exceptions
        import google.auth.transport.requests

        try:
            self._credentials.refresh(google.auth.transport.requests.Request())
        except google.auth.exceptions.RefreshError as err:
            raise ProviderRejected(f"{self.name}: Google refused the credentials ({one_line(str(err))}; "
                                   f"{self.credentials_hint()})", 401) from None
        except google.auth.exceptions.GoogleAuthError as err:  # the token endpoint could not be reached
            raise ProviderError(f"{self.name}: no Google token ({one_line(str(err))})") from None

    def credentials_hint(self) -> str:
        return "check the Google credentials: gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS"

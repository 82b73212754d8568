"""Stub cloud credentials for the Bedrock and Vertex providers, read by the real libraries.

AWS: access keys in the environment, which botocore's credential chain takes first (and nothing
from the machine: no profile, no config files, no instance metadata). Google: a service-account
file with a key made for the test, whose token endpoint is the fake model server's `/token`, so
google-auth signs a real token request and the fake answers it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

AWS_KEYS = {"AWS_ACCESS_KEY_ID": "AKIDFAKEFAKEFAKE", "AWS_SECRET_ACCESS_KEY": "fake/secret/key",
            "AWS_SESSION_TOKEN": "fake-session-token"}
CREDENTIALS_PROJECT = "project-of-the-credentials"
# What the machine's environment might hold that would change where the credentials come from.
UNSET = ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_BEARER_TOKEN_BEDROCK", "GOOGLE_CLOUD_PROJECT",
         "GCLOUD_PROJECT")


@functools.cache
def _private_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def cloud_environment(directory: Path, token_url: str) -> dict[str, str]:
    """The environment variables that point both libraries at the stubs (files go in `directory`)."""
    google = directory / "google-credentials.json"
    google.write_text(json.dumps({"type": "service_account", "project_id": CREDENTIALS_PROJECT,
                                  "private_key_id": "fake-key", "private_key": _private_key_pem(),
                                  "client_email": "iota-test@fake.iam.gserviceaccount.com", "client_id": "1",
                                  "token_uri": token_url}))
    return {**AWS_KEYS, "AWS_CONFIG_FILE": str(directory / "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(directory / "no-aws-credentials"), "AWS_EC2_METADATA_DISABLED": "true",
            "GOOGLE_APPLICATION_CREDENTIALS": str(google)}

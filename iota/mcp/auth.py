"""OAuth for streamable-HTTP MCP servers: where a server's tokens are kept, and what a chat's
connection to the server authenticates with. (The login a person runs is `iota.mcp.login`.)

    ~/.iota/mcp/auth/<name>.json    mode 0600, replaced in one step, never half written: the
                                    endpoint the tokens were issued for, the client iota is
                                    registered as, the tokens, when the access token expires,
                                    and the authorization server's metadata (where a refresh goes)

The protocol is the SDK's (`mcp.client.auth.OAuthClientProvider`: discovery, dynamic client
registration, the PKCE authorization-code grant, refreshing a token that has expired). What is
iota's is the file, and the rule that a chat never starts a login — that needs a person at a
browser, so it is `iota mcp login <name>`'s alone. A server entry's `auth:` says how a chat
reaches it:

    auth: auto    the default. The stored tokens when there are any; without them the server is
                  reached with its headers alone, and one that answers 401 fails with
                  `not logged in: run iota mcp login <name>` rather than a bare status.
    auth: oauth   tokens are required: without them the server fails at once with that line,
                  and is not contacted.
    auth: none    the headers alone; a token file is never read, a 401 is a 401.

Tokens go only where they were issued: a file whose endpoint is not the server's URL (the entry
was pointed elsewhere since the login) counts as no login at all.

The SDK is imported only by `connection_auth` and `TokenStore`'s users, when a server starts.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from iota import paths
from iota.config.entries import McpServerConfig
from iota.errors import ConfigError, IotaError

# Server names that can name a file: the characters `iota mcp add` allows.
FILE_NAME = re.compile(r"[A-Za-z0-9_-]+")
CALLBACK_PATH = "/callback"
CLIENT_NAME = "iota"
GRANT_TYPES = ["authorization_code", "refresh_token"]
# The redirect URI of a chat's OAuth client, which never logs in (it is never used).
UNUSED_REDIRECT = f"http://127.0.0.1{CALLBACK_PATH}"


class NotLoggedIn(IotaError):
    """A server that needs tokens iota does not have; the message says what to run."""

    def __init__(self, name: str):
        super().__init__(not_logged_in(name))


def not_logged_in(name: str) -> str:
    return f"not logged in: run iota mcp login {name}"


def auth_mode(server: McpServerConfig) -> str:
    """How a server is authenticated: auto, oauth or none (a stdio server: none)."""
    return (server.auth or "auto") if server.url else "none"


def token_path(name: str) -> Path:
    if not FILE_NAME.fullmatch(name):
        raise ConfigError(f'MCP server "{name}": OAuth needs a name of letters, digits, - and _ '
                          "(it names the token file)")
    return paths.app_home() / "mcp" / "auth" / f"{name}.json"


def client_metadata(server: McpServerConfig, redirect_uri: str) -> Any:
    """What iota registers as (or, with `client_id:`, presents itself as)."""
    from mcp.shared.auth import OAuthClientMetadata

    return OAuthClientMetadata(client_name=CLIENT_NAME, redirect_uris=[redirect_uri], grant_types=GRANT_TYPES,
                               token_endpoint_auth_method=_token_auth_method(server))


def configured_client(server: McpServerConfig, redirect_uri: str) -> Any:
    """The client the entry's `client_id:` (and `client_secret:`) name, for a server that registers
    nobody; None when the entry has none (iota registers itself)."""
    if not server.client_id:
        return None
    from mcp.shared.auth import OAuthClientInformationFull

    return OAuthClientInformationFull(
        client_id=server.client_id, client_secret=server.client_secret or None, redirect_uris=[redirect_uri],
        token_endpoint_auth_method=_token_auth_method(server), grant_types=GRANT_TYPES)


def _token_auth_method(server: McpServerConfig) -> str | None:
    """How the entry's own client proves itself at the token endpoint: its secret in the form, or
    nothing (a public client). None when iota registers itself: the server decides then."""
    if not server.client_id:
        return None
    return "client_secret_post" if server.client_secret else "none"


class TokenStore:
    """One server's token file, as the SDK's `TokenStorage` wants it. A chat's store writes each
    change at once (a refreshed token must outlive the process); a login's keeps everything in
    memory until `save`, so a login that fails leaves the earlier file as it was."""

    def __init__(self, server: McpServerConfig, *, client: Any = None, record: dict | None = None,
                 autosave: bool = True):
        self.name = server.name
        self.url = server.url or ""
        self.path = token_path(server.name)
        self._client = client  # a configured client wins over a registered one
        self.record = record if record is not None else self.stored()
        self.autosave = autosave
        self.metadata: Any = None  # the authorization server's, once discovered

    def stored(self) -> dict:
        """The file, when it is for this server's URL; else an empty record."""
        record = read_record(self.path)
        return record if record.get("url") == self.url else {}

    @property
    def expires_at(self) -> float | None:
        return self.record.get("expires_at")

    def has_tokens(self) -> bool:
        return bool((self.record.get("tokens") or {}).get("access_token"))

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        tokens = self.record.get("tokens")
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: Any) -> None:
        self.record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        self.record["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        if self.autosave:
            self.save()

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        if self._client is not None:
            return self._client
        client = self.record.get("client")
        return OAuthClientInformationFull.model_validate(client) if client else None

    async def set_client_info(self, client_info: Any) -> None:
        self.record["client"] = client_info.model_dump(mode="json", exclude_none=True)
        if self.autosave:
            self.save()

    def save(self) -> None:
        record = {"url": self.url, **{key: value for key, value in self.record.items() if key != "url"}}
        if self.metadata is not None:
            record["metadata"] = self.metadata.model_dump(mode="json", exclude_none=True)
        if self._client is not None:
            record.pop("client", None)  # the entry names it; its secret stays in the config
        write_private(self.path, json.dumps(record, indent=2).encode() + b"\n")


def read_record(path: Path) -> dict:
    """A token file's record; {} when there is none. A file that is not one is an error, not a
    silent logout."""
    try:
        record = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise IotaError(f"cannot read {path} ({getattr(error, 'strerror', None) or error}); "
                        "remove it and log in again") from None
    if not isinstance(record, dict):
        raise IotaError(f"{path} is not a token file; remove it and log in again")
    return record


def write_private(path: Path, data: bytes) -> None:
    """Replace `path` with `data`, readable by its owner alone: the bytes go to a new file that is
    0600 from the start (mkstemp), are synced, and the new file is renamed over the old — so the
    file is the old one or the new, whole, and never readable by anyone else, even for a moment."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def login_state(server: McpServerConfig) -> str:
    """`logged in`, `expired` (past its time with nothing to refresh it) or `not logged in`."""
    try:
        store = TokenStore(server)
    except IotaError:
        return "not logged in"
    if not store.has_tokens():
        return "not logged in"
    refreshable = bool(store.record["tokens"].get("refresh_token"))
    expired = store.expires_at is not None and store.expires_at <= time.time()
    return "expired" if expired and not refreshable else "logged in"


def connection_auth(server: McpServerConfig) -> Any:
    """The httpx auth a chat's connection to `server` (expanded) is made with, or None: the
    stored tokens, refreshed when they expire. Raises NotLoggedIn for `auth: oauth` without them."""
    mode = auth_mode(server)
    if mode == "none" or (mode == "auto" and not FILE_NAME.fullmatch(server.name)):
        return None  # (a name that cannot name a token file has none; only auth: oauth says so)
    store = TokenStore(server, client=configured_client(server, UNUSED_REDIRECT))
    if not store.has_tokens():
        if mode == "oauth":
            raise NotLoggedIn(server.name)
        return None

    async def no_login(*_: Any) -> Any:
        # The tokens no longer do, and nothing could refresh them: that takes a person.
        raise NotLoggedIn(server.name)

    return stored_oauth(server, store, client_metadata(server, UNUSED_REDIRECT), no_login, no_login)


def stored_oauth(server: McpServerConfig, store: TokenStore, metadata: Any, redirect_handler: Any,
                 callback_handler: Any) -> Any:
    """The SDK's OAuth provider over `store`, told what the SDK itself would forget between two
    processes: when the stored access token expires (it keeps that only in memory, from the
    token response, so a token read back from a file would pass for valid forever and never be
    refreshed), and the authorization server's metadata (without it a refresh is posted to the
    MCP server's own origin, which is not always where the tokens come from)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthMetadata

    class StoredOAuth(OAuthClientProvider):
        async def _initialize(self) -> None:
            await super()._initialize()
            self.context.token_expiry_time = store.expires_at
            if store.record.get("metadata") and self.context.oauth_metadata is None:
                self.context.oauth_metadata = OAuthMetadata.model_validate(store.record["metadata"])

    return StoredOAuth(server.url, metadata, store, redirect_handler=redirect_handler,
                       callback_handler=callback_handler)

"""The environment a `shell` command gets: iota's own, without the person's secrets.

iota holds API keys in its environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, whatever a provider's
`key: ${env:NAME}` names), and so usually does the shell it was started from (`GITHUB_TOKEN`,
`AWS_SECRET_ACCESS_KEY`, …). A command the model writes must not see them: `env`, `printenv` or
`echo $…` would hand them to the model, and from there to a file or the network. So every
command, sandboxed or not, starts from iota's environment less every variable whose name looks
secret — it contains KEY, SECRET, TOKEN, PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL or COOKIE, in
any case — or that a provider's key or URL refers to, or whose value is a URL carrying a password
(`postgres://user:pw@host/db`). The person keeps what a command needs with `env_keep:` on the shell
toolset: names or shell-style patterns (`GITHUB_TOKEN`, `AWS_*`) kept even when they look secret.
Variables the config refers to with `${env:NAME}` (in a provider's key or URL, an MCP server's
env, headers or client secret) count as secret whatever they are called.

MCP stdio servers are not commands the model writes: they are configured by the person, with the
environment the person gave them, and keep it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

SECRET_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "COOKIE")

# `scheme://user:password@host`: a password in a URL's user part.
_URL_WITH_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*:[^/@\s]+@")


@dataclass(frozen=True)
class EnvironmentPolicy:
    """Which of iota's variables a command may see. `keep` is the toolset's `env_keep:`; `secret`
    names variables iota knows hold keys (the config's `${env:…}` references)."""

    keep: tuple[str, ...] = ()
    secret: frozenset[str] = frozenset()

    def environment(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """`environ` (iota's own by default) without the variables that look secret."""
        environ = os.environ if environ is None else environ
        return {name: value for name, value in environ.items() if self.kept(name) or not self.looks_secret(name, value)}

    def kept(self, name: str) -> bool:
        return any(fnmatchcase(name, pattern) for pattern in self.keep)

    def looks_secret(self, name: str, value: str) -> bool:
        upper = name.upper()
        return (
            name in self.secret
            or any(word in upper for word in SECRET_WORDS)
            or _URL_WITH_PASSWORD.match(value) is not None
        )


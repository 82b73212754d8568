"""The environment a `shell` command gets: a short allow-list of iota's own, never a secret.

iota holds API keys in its environment (`ANTHROPIC_API_KEY`, whatever a provider's `key:
${env:NAME}` names), and so usually does the shell it was started from — under names no word
list guesses (`GH_PAT`, `STRIPE_SK`, `CI_JOB_JWT`), or in values (`SENTRY_DSN` with its key in
the URL's user part, `PG_DSN` with `password=…`). A command the model writes must not see them:
`env` would hand them to the model, and from there to a file or the network. So a command,
sandboxed or not, gets only:

- the core set, `CORE`: where things are and how to show them (PATH, HOME, the locale, the
  terminal, the editor, git's author name, the toolchains' install locations), names whose values
  are never secrets; everything else is left out, silently;
- the names the person lists in `env_keep:` on the shell toolset, exact names or shell-style
  patterns (`AWS_*`).

A variable passed by a pattern (or the core set) is still withheld when it looks secret — its name
has a secret word in it, its value is a URL with a user part or carries `password=`/`"auth":`, or
detect-secrets (iota.memory.secrets, the scanner that guards the memory) finds a key or token
in it — and so is a variable the config hands to a provider or MCP server (`${env:NAME}`).
Only a name written out exactly in `env_keep` passes whatever it holds: the person asked for that
one. What is withheld this way is said once, on the start-up card (`withheld`), so the person
knows to name it.

The core set's values are judged only by their shape (URL user part, `password=`), not by
detect-secrets: a PATH through the Nix store is full of random-looking hashes.

MCP stdio servers are not commands the model writes: they are configured by the person, with the
environment the person gave them, and keep it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

# What every command gets (fnmatch patterns). docs/sandbox.md lists them; keep the two the same.
CORE = (
    # who and where
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "TMPDIR", "TZ",
    # the locale and the terminal
    "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM", "NO_COLOR",
    # the person's programs
    "EDITOR", "VISUAL", "PAGER",
    # where programs keep their files
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
    "XDG_RUNTIME_DIR",
    # git's author and committer (names and addresses, which every commit carries anyway)
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
    # toolchain locations
    "JAVA_HOME", "GOPATH", "GOROOT", "GOBIN", "GOCACHE", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYENV_ROOT", "PYENV_VERSION",
    "NVM_DIR", "NVM_BIN", "PNPM_HOME", "VOLTA_HOME", "BUN_INSTALL", "DENO_DIR", "GEM_HOME", "GEM_PATH",
    "RBENV_ROOT", "SDKMAN_DIR", "ANDROID_HOME", "ANDROID_SDK_ROOT", "DOTNET_ROOT", "MANPATH",
    "PKG_CONFIG_PATH",
)

SECRET_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "COOKIE")
# Whole parts of a name (between underscores) that mean a secret: GH_PAT, PG_DSN, MY_SERVICE_AUTH.
SECRET_PARTS = frozenset({"AUTH", "PAT", "PWD", "PASS", "DSN", "JWT", "SK", "CREDS", "SIGNATURE"})

# `scheme://user@host` or `scheme://user:password@host`: a key or password in a URL's user part.
_URL_WITH_USER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]+@")
# `password=…` (a libpq or ODBC connection string), `"auth": …` (Docker's auth config), `_authToken=` (npm).
_CREDENTIAL_FIELD = re.compile(r"(?i)(?:\b|_)(?:password|passwd|pwd|auth|authtoken|token|secret|api_?key)"
                               r"[\"']?\s*[=:]")
_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class EnvironmentPolicy:
    """Which of iota's variables a command may see. `keep` is the toolset's `env_keep:`; `secret`
    names variables iota knows hold keys (the config's `${env:…}` references)."""

    keep: tuple[str, ...] = ()
    secret: frozenset[str] = frozenset()

    def environment(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The part of `environ` (iota's own by default) a command gets."""
        environ = os.environ if environ is None else environ
        return {name: value for name, value in environ.items()
                if self.allowed(name) and not self.why_withheld(name, value)}

    def withheld(self, environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
        """(name, why) of each variable the allow-list names but that is withheld as secret."""
        environ = os.environ if environ is None else environ
        return [(name, why) for name, value in sorted(environ.items())
                if self.allowed(name) and (why := self.why_withheld(name, value))]

    def notice(self, environ: Mapping[str, str] | None = None) -> str | None:
        """One line for the start-up card naming what is withheld, or None."""
        withheld = self.withheld(environ)
        if not withheld:
            return None
        names = ", ".join(f"{name} ({why})" for name, why in withheld)
        return f"shell: withheld from commands as secret: {names}; name one exactly in env_keep to pass it"

    def allowed(self, name: str) -> bool:
        """In the core set or in `env_keep` (by name or pattern)."""
        return any(fnmatchcase(name, pattern) for pattern in (*CORE, *self.keep))

    def named(self, name: str) -> bool:
        """Written out exactly in `env_keep`, not matched by a pattern."""
        return name in self.keep and not _GLOB.search(name)

    def why_withheld(self, name: str, value: str) -> str:
        """Why an allowed variable is withheld all the same, or "" when it passes."""
        if self.named(name):
            return ""
        if name in self.secret:
            return "the config hands it to a provider or server"
        core = any(fnmatchcase(name, pattern) for pattern in CORE)
        if not core and secret_name(name):
            return "its name says secret"
        if _URL_WITH_USER.search(value):
            return "a URL with a user part"
        if _CREDENTIAL_FIELD.search(value):
            return "a password or key field"
        if not core:
            from iota.memory.secrets import secret_kind  # detect-secrets: a tenth of a second to import

            kind = secret_kind(value)
            if kind is not None:
                return kind
        return ""


def secret_name(name: str) -> bool:
    """A name that says it holds a secret: a secret word in it, or a part like PAT, DSN, AUTH."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS) or any(part in SECRET_PARTS for part in upper.split("_"))

"""Spotting a secret before the model files it in MEMORY.md.

The memory is plain text, sent with every request, and people keep it in git, so a key written
there leaks three ways at once. Models do write them: a user pastes a token to get something
working, and "remember this" follows.

The detection is Yelp's detect-secrets, a maintained scanner, rather than patterns of our own:

- its line scanner, reading the line as a config file would be read, so the keyword plugin
  catches `password: …`, `aws_secret_access_key=…` and `OPENAI_API_KEY=…`, and the plugins of
  known token shapes (AWS, private keys, GitHub, Slack tokens and webhooks, npm, Stripe, …)
  catch theirs;
- its ad-hoc string scan, which also looks at words without quotes around them, for the
  high-entropy plugin: a long random-looking word (a Hugging Face or Anthropic key, a bare npm
  token) is a secret whatever it is called. The entropy limit is applied here, as the scanner's
  own `scan --string` does.

Hex high-entropy strings are left out: a commit hash is hex and belongs in a coder's memory. So
is verification: nothing is ever sent anywhere to check a key. An ordinary note that mentions
tokens ("the token lives in $GITHUB_TOKEN", "rotate the API key monthly") passes.

detect-secrets (and `requests`, which it imports) costs about a tenth of a second to import, so
it is imported the first time a memory line is checked, never at start.
"""

from __future__ import annotations

import functools

# The plugins, by detect-secrets' class names. The keyword, AWS, private-key and high-entropy
# plugins are the core; the rest know the shapes of particular services' tokens.
_PLUGINS = (
    "KeywordDetector", "AWSKeyDetector", "PrivateKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector",
    "BasicAuthDetector", "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector",
    "JwtTokenDetector", "MailchimpDetector", "NpmDetector", "OpenAIDetector", "PypiTokenDetector",
    "SendGridDetector", "SlackDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)
_ENTROPY_LIMIT = 4.5  # detect-secrets' default for base64-like strings
# The keyword plugin reads `name: value` without quotes only in config files; the name picks that.
_READ_AS = "MEMORY.cfg"

# What the refusal calls each kind; any other plugin's find is "an API key".
_KINDS = {
    "AWS Access Key": "an AWS access key",
    "Private Key": "a private key",
    "GitHub Token": "a GitHub token",
    "Slack Token": "a Slack token",
    "JSON Web Token": "a JSON web token",
    "Basic Auth Credentials": "a password in a URL",
    "Secret Keyword": "a password or token",
}


def secret_kind(text: str) -> str | None:
    """What kind of secret `text` seems to hold (`an API key`), or None."""
    scan, plugins = _scanner()
    found = [*scan._process_line_based_plugins([(1, text)], filename=_READ_AS), *scan.scan_line(text)]
    for secret in found:
        plugin = plugins[secret.type]
        if hasattr(plugin, "entropy_limit") and \
                plugin.calculate_shannon_entropy(secret.secret_value or "") <= plugin.entropy_limit:
            continue  # the ad-hoc scan yields every candidate word; only the random-looking ones count
        return _KINDS.get(secret.type, "an API key")
    return None


@functools.cache
def _scanner():
    """detect-secrets' scanner, set up once with our plugins and its default filters (which
    leave out `$VARIABLE`s, `${…}` templates, UUIDs and sequences, and never verify a key)."""
    from detect_secrets.core import scan
    from detect_secrets.settings import get_plugins, get_settings

    get_settings().configure_plugins([{"name": name} for name in _PLUGINS] +
                                     [{"name": "Base64HighEntropyString", "limit": _ENTROPY_LIMIT}])
    return scan, {plugin.secret_type: plugin for plugin in get_plugins()}

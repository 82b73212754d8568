"""The starter config: written by `iota config init`, and by the first run that finds no config.

It must work as written once a key is set, so it names both providers and picks the default
model by the key the environment already has (Anthropic when only ANTHROPIC_API_KEY is set,
else OpenAI). The bot entry is commented out: uncommenting it is how a person makes a bot.
"""

from __future__ import annotations

import os
from pathlib import Path

from iota.errors import ConfigError

_TEMPLATE = """\
# iota's config. Four maps: providers, models, agents, mcp_servers.
# Check it with `iota config check`; see docs/config.md (in iota's repository) for every key.

providers:
  openai:
    type: openai          # the key comes from $OPENAI_API_KEY, or set key: here
  anthropic:
    type: anthropic       # the key comes from $ANTHROPIC_API_KEY, or set key: here

models:
  gpt:
    provider: openai
    id: gpt-5.2
    context_window: 400k
  claude:
    provider: anthropic
    id: claude-sonnet-4-5
    context_window: 200k

agents:
  default:                # `iota` and `iota run` start this one
    model: {model}
  coder:                  # `iota run coder`: reads and changes the project it starts in
    mode: agent
    model: {model}
    tools:
      code:
      shell:

  # A bot keeps one conversation forever, with a memory it writes (`iota run helper`).
  # helper:
  #   mode: bot
  #   model: {model}
  #   tools:
  #     code: {{ auto_write: true }}                 # writes and edits land without a yes
  #     shell: {{ sandbox: auto, auto_run: true }}   # commands run confined, none waits for a yes

mcp_servers: {{}}
"""


def starter_choice() -> tuple[str, str, str]:
    """(model name, provider type, model id) the starter defaults to."""
    if os.environ.get("ANTHROPIC_API_KEY") and not os.environ.get("OPENAI_API_KEY"):
        return "claude", "anthropic", "claude-sonnet-4-5"
    return "gpt", "openai", "gpt-5.2"


def starter_text() -> str:
    return _TEMPLATE.format(model=starter_choice()[0])


def write_starter(path: Path) -> str:
    """Write the starter to `path` (never over an existing file); return the announcement."""
    try:
        with open(path, "x", encoding="utf-8") as file:
            file.write(starter_text())
    except FileExistsError:
        raise ConfigError(f"{path} already exists; edit it, or remove it first") from None
    _, provider, model_id = starter_choice()
    variable = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
    return f"Wrote {path} (a starter config: {provider} + {model_id}; edit it, or set {variable} and go)"

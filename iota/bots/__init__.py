"""Bots: an agent with one conversation that never ends. `bot` holds the requirement checks,
the bot's directory under `~/.iota/bots/<name>/`, its pointer and lock, its memory in layers,
and how a start comes back (resume notices); `roster` what `iota bots` lists, shows and removes.

Builds on `iota.sessions` and `iota.memory`; nothing below it imports this package.
"""

"""Bots: an agent with one conversation that never ends. `bot` holds the requirement checks,
the bot's directory under `~/.iota/bots/<name>/`, its pointer and lock, its memory in layers,
and how a start comes back (resume notices); `roster` what `iota bots` lists, shows and removes.
A bot's work lives beside it: `tasks` (checklists it continues by itself), `schedules` and
`timetables` (turns it starts at set times), `notes` (documents it keeps), on the small record
files of `records`.

Builds on `iota.sessions` and `iota.memory`; nothing below it imports this package.
"""

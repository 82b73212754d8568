"""The config: which files are read and how they merge (`settings`), the key audit that runs
on the raw document first (`audit`), the trust of a project's file (`trust`), and the starter
file a first run writes (`starter`).

Imports only `iota.errors`, `iota.paths` and `iota.text` — and, to save a trust decision,
`iota.sessions.bundle`'s atomic write: everything else reads the config, so the config reads
nothing of theirs.
"""

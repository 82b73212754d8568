"""The config: which files are read and how they merge (`settings`), the key audit that runs
on the raw document first (`audit`), and the starter file a first run writes (`starter`).

Imports only `iota.errors`, `iota.paths` and `iota.text`: everything else reads the config, so
the config reads nothing of theirs.
"""

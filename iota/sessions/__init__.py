"""Session bundles: ids and the one writer (`bundle`), `meta.json` and atomic writes (`meta`), the
append-only record log and the live view built from it (`log`), the repair that makes any log a
view both providers accept (`repair`), the one-writer lock (`locking`), one chat's live
conversation (`conversation`), and what makes a session findable again: its title (`titles`),
its place in the tree (`tree`), and filing and forking it under its lock (`manage`).

Knows nothing of bots, memory, providers or tools: it stores `iota.messages.Message` records.
"""

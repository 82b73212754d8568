"""Session bundles: ids and `meta.json` (`bundle`), the append-only record log and the live view
built from it (`log`), the one-writer lock (`locking`), and one chat's live conversation
(`conversation`).

Knows nothing of bots, memory, providers or tools: it stores `iota.messages.Message` records.
"""

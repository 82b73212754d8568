"""Session bundles: ids and the one writer (`bundle`), `meta.json` and atomic writes (`meta`), the
append-only record log and the live view built from it (`log`), the repair that makes any log a
view both providers accept (`repair`), the one-writer lock (`locking`), and one chat's live
conversation (`conversation`).

Knows nothing of bots, memory, providers or tools: it stores `iota.messages.Message` records.
"""

"""A bot's memory: MEMORY.md and the layers beside it.

    lines       what a line of a memory file is, sizes, quoting, the refusal
    kinds       the files the model writes (MEMORY.md, USER.md, BRIEF.md, SOUL.md) and their sections
    document    a file as a document, and the edits `remember` makes to it
    block       the `<memory>` block of MEMORY.md, and the blocks of the other files
    file        one file on disk: its backup, the tool's writes, telling them from a person's edits
    scope       the front matter that says where a file applies
    layers      every file of every layer, in the prompt's fixed order, refreshed file by file
    agent       an agent's own memory directory (mode: agent), scoped by the session too
    report      the memory as `/memory`, `iota bots show` and `iota agents show` describe it
    secrets     the secret filter; provenance: what backs a `[user]` line or a SOUL.md patch

Pure text handling except `file` and `layers`, which read and write the files. Imports no
provider or bot code, and of the sessions only the atomic write and the compaction summary's
markers.
"""

"""A bot's MEMORY.md: the document and its line edits (`document`), the block sent to the model
(`block`), the file on disk with its backup and reload (`file`), the secret filter (`secrets`),
and what backs a `[user]` line (`provenance`).

Pure text handling except `file`, which reads and writes the one file. Imports no provider or
bot code, and of the sessions only the atomic write and the compaction summary's markers.
"""

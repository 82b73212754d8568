"""A bot's MEMORY.md: the document and its line edits (`document`), the block sent to the model
(`block`), the file on disk with its backup and reload (`file`), and the secret filter
(`secrets`).

Pure text handling except `file`, which reads and writes the one file. Imports no session,
provider or bot code.
"""

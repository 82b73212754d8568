"""The `code` toolset (glob, grep, list_dir, read_file, edit_file, write_file), jailed at the
project root: `toolset` puts a set together from `paths` (the jail), `shared` (the ledger and
caps), `walk`, `read` and `write`. Uses `iota.sandbox.protected` for what no writer may touch.
"""

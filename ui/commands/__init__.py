"""The `iota` subcommands, one module each; `ui.cli` parses the arguments and dispatches here.
`shared` holds what every command uses: the exit codes and loading the config a run would use.
"""

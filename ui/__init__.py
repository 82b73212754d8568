"""The faces of iota: the command line and the terminal app."""

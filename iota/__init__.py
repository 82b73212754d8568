"""iota: a terminal AI agent. This package is the domain: plain functions and classes."""

__version__ = "0.1.0"

"""Toolsets: what the model can call."""

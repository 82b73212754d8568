"""What every command needs: the config a run would load, with its warnings on stderr."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from iota import paths


def load_config(args: argparse.Namespace, *, write_starter: bool = False):
    """Load the config a run would use; the first run with no config anywhere gets the starter."""
    from iota.config import settings
    from iota.config import starter

    cwd = Path.cwd()
    if write_starter and args.config is None:
        user_file = paths.user_config_path()
        if not user_file.exists() and not paths.project_config_path(cwd).exists():
            print(starter.write_starter(user_file), file=sys.stderr)
    loaded = settings.load(cwd, args.config)
    for warning in loaded.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    return loaded

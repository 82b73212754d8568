"""`iota config check|path|init`: check the config a run would load (and what of an untrusted
project file it leaves out, and why), print where it is, write the starter."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from iota import paths
from iota.config import trust
from iota.errors import EXIT_OK
from ui.commands.shared import load_config


def config_command(args: argparse.Namespace) -> int:
    from iota.config import starter

    if args.action == "init":
        print(starter.write_starter(args.config or paths.user_config_path()))
        return EXIT_OK
    if args.action == "path":
        if args.config is not None:
            print(os.path.abspath(args.config))
            return EXIT_OK
        cwd = Path.cwd()
        print(paths.user_config_path())
        project = paths.project_config_path(cwd)
        if project.exists():
            print(project)
        return EXIT_OK
    loaded = load_config(args)
    if args.config is not None:
        print(f"config: {loaded.explicit_file} (given with -c; the only scope)")
    else:
        review = loaded.project_review
        print(f"user config: {loaded.user_file or '(absent)'}")
        print(f"project config: {loaded.project_file or (review.path if review else '(absent)')}")
        if review is not None:
            for line in trust.report(review):
                print(line)
    print(loaded.counts())
    return EXIT_OK

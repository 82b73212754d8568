"""`iota config check|path|init`: check the config a run would load (and what of an untrusted
project file it leaves out, and why), print where it is, write the starter.

A config can load and still not run: `iota run coder` refuses a bot whose window is too small or
that says `no_save: true`, an agent with no model, a `system_file:` that cannot be read. `check`
asks each agent what `iota run <agent>` would ask before it starts, and fails with each refusal
on a line of its own, so a config that passes the check is one every agent starts from.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from iota import paths
from iota.config import trust
from iota.errors import EXIT_ERROR, EXIT_OK, IotaError
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
    refusals = run_refusals(loaded, Path.cwd())
    for agent, reason in refusals:
        print(f"Error: iota run {agent} would refuse to start: {reason}", file=sys.stderr)
    if refusals:
        return EXIT_ERROR
    print(loaded.counts())
    return EXIT_OK


def run_refusals(loaded, cwd: Path) -> list[tuple[str, str]]:
    """(agent, why) for each agent `iota run <agent>` (no flags) would refuse before it starts:
    the same checks, in the same order, as the run makes."""
    from iota.bots import bot as bots
    from iota.config.instructions import read_instructions
    from iota.config import settings

    refusals = []
    for name, agent in loaded.agents.items():
        try:
            model = settings.resolve_model(loaded, agent)
            if agent.mode == "bot":
                bots.check_bot(agent, model)
            read_instructions(loaded, agent, cwd)
        except IotaError as error:
            refusals.append((name, str(error)))
    return refusals

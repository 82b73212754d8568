"""The sandbox a `shell` command runs in, and what keeps a command from outliving its call.

`bwrap` decides at start-up whether bubblewrap can confine commands and builds each command's
bwrap line; `mounts` and `placeholders` lay the filesystem it sees (the project writable, git's
code-running files and `.iota.yaml` read-only, `~/.iota` and the host's sockets hidden);
`protected` names what no writer may touch; `environment` is the allow-list of variables a
command gets; `processes` and `reaper` kill what a call leaves running; `confinement` and
`self_call` are how a child iota started from a confined command knows it is confined.

Builds on `iota.errors` and `iota.paths` alone; `iota.tools` (the shell) and `iota.chat` use it.
docs/sandbox.md says what it promises, tests/security/README.md the attack behind each promise.
"""

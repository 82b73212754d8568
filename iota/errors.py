"""Every error iota raises on purpose, in one tree.

    IotaError                      anything iota reports as `Error: <message>`
    ├── ConfigError                a config file or flag is wrong; the message names the file and key
    ├── SessionError               a session bundle cannot be found, opened or written
    │   ├── SessionNotFound        no bundle matches an id or prefix
    │   ├── AmbiguousSession       a prefix matches several bundles
    │   ├── SessionLocked          another live process holds the bundle's lock (names its pid)
    │   ├── LockingUnsupported     the filesystem cannot hold a lock, so nothing is written there
    │   └── MetaNotSaved           the records were written but meta.json was not (it is written later)
    ├── BotError                   a bot's requirements, pointer or directory are not right
    ├── SearchError                a search index cannot be opened, read or rebuilt
    ├── ProviderError              a model provider failed
    │   ├── MissingAPIKey          no key in the environment or the config
    │   ├── ContextTooLong         the request does not fit the model's window (compaction can fix it)
    │   ├── ResponseStalled        no byte arrived for the stall limit
    │   └── ProviderRejected       the provider answered with an error that retrying will not fix
    └── CompactionFailed           a compaction did not produce a summary (the conversation is unchanged)

    ToolError                      a tool refuses or fails; the model reads it as the call's result

`ToolError` stands apart from `IotaError`: a tool that cannot do what it was asked gives the model
an error *result* to read (iota.tools.base turns the exception into one), it does not end the turn
or the run. It lives here, not with the tools, because the domain below them (a bot's tasks and
schedules, memory lines, time zones) raises it too.

Every message is one line that says what is wrong and, where it can, what to do.
"""

from __future__ import annotations

# How the `iota` command ends: an IotaError exits 1, an interrupted run (Ctrl+C at an idle
# prompt, SIGINT, SIGTERM, SIGHUP) 130, like a shell's 128 + SIGINT.
EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 130


class IotaError(Exception):
    """Base of everything iota reports to the user as `Error: <message>`."""


class ConfigError(IotaError):
    pass


class SessionError(IotaError):
    pass


class SessionNotFound(SessionError):
    pass


class MetaNotSaved(SessionError):
    """The batch is in the log; only meta.json, its summary, could not be rewritten."""


class AmbiguousSession(SessionError):
    pass


class SessionLocked(SessionError):
    """Another process holds the lock. `pid` is the holder's pid, or None if it wrote none."""

    def __init__(self, message: str, pid: int | None = None):
        super().__init__(message)
        self.pid = pid


class LockingUnsupported(SessionError):
    pass


class BotError(IotaError):
    pass


class SearchError(IotaError):
    pass


class ProviderError(IotaError):
    pass


class MissingAPIKey(ProviderError):
    pass


class ContextTooLong(ProviderError):
    pass


class ResponseStalled(ProviderError):
    def __init__(self, message: str = "Response stalled"):
        super().__init__(message)


class ProviderRejected(ProviderError):
    """An HTTP or in-stream error from the provider; `status` is the HTTP status when there was one."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class CompactionFailed(IotaError):
    """The message is the one-line reason shown as `Compaction failed: <reason>`."""


class ToolError(Exception):
    """A refusal or failure the model should read, e.g. `path is outside the project root`."""

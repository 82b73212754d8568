"""What one chat is made of, settled once from the config: the model, the provider, the
instructions, the project, and how its tools are opened. The headless turn and the terminal
app both start from a `ChatSetup`.

An iota started by a sandboxed iota's command is confined (iota.sandbox.confinement): every chat
it would start passes `enforce_confinement` first, its shell must get a working sandbox, and it
starts no MCP server (a server runs outside the sandbox, and its tools do not ask).
"""

from __future__ import annotations

import math
import os
import shutil
import sys
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, AsyncIterator, Callable

import trio

from iota.config import entries, params, settings
from iota.config.confined import ProjectPin
from iota import paths
from iota.config.settings import Config, ResolvedModel
from iota.config.entries import AgentConfig
from iota.debug_log import DebugLog
from iota.config.instructions import read_instructions
from iota.mcp.servers import servers_for_run
from iota.messages import Message
from iota.prompt import PromptContext, compose
from iota.providers.base import Provider, Request
from iota.tools.base import Toolbox
from iota.sandbox.confinement import HEADLESS_ONLY, Confinement
from iota.skills import discover, Skill

if TYPE_CHECKING:  # a headless turn saves nothing: the session modules load when a chat makes one
    from iota.sessions.bundle import Session
    from iota.tools.ask import Asker


@dataclass
class ChatSetup:
    config: Config
    agent: AgentConfig
    model: ResolvedModel
    project_root: Path
    cwd: Path
    instructions: str
    interactive: bool
    skills: list[Skill] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # one-line start-up warnings
    host_lines: list[str] = field(default_factory=list)
    memory_block: str = ""
    notes_catalog: str = ""   # a bot's notes, refreshed before each message (iota.bots.notes)
    extra_tools: list = field(default_factory=list)   # a bot's `remember` (and `recall`, and its work's tools)
    journal: bool = False   # a bot whose journal is open: the prompt tells it to look things up
    # How the `ask` tools reach the person; the interactive chat sets it before opening the tools.
    asker: Asker | None = None
    # The run's `--mcp` servers, and where MCP servers' one-line notices go as (text, warning);
    # without a sink their warnings join `warnings`. Both are set before the tools are opened.
    mcp_flags: list[str] = field(default_factory=list)
    on_mcp_event: Callable[[str, bool], None] | None = None
    # What the iota that started this one confines it to (None: it was not started confined).
    confinement: Confinement | None = None
    # `/debug`: while on, every request the chat's provider makes is recorded (iota.debug_log).
    debug: DebugLog = field(default_factory=DebugLog)
    # The session the chat now writes (the lane sets it): a helper's child session goes under it.
    caller_session: Callable[[], Session | None] = lambda: None
    # Told of each helper's child session once it is closed (a bot's journal indexes it).
    on_helper_session: Callable[[Session], None] = lambda session: None
    # The agents a bot defined (`delegate` define, iota.bots.defined_agents), helpers beside the config's.
    defined_agents: dict[str, AgentConfig] = field(default_factory=dict)
    _provider: Provider | None = None
    _retired: list = field(default_factory=list)  # providers a /model switch left, closed at the end

    @property
    def mode(self) -> str:
        return self.agent.mode

    def provider(self) -> Provider:
        """The provider, made on first use (recording its round trips while /debug is on)."""
        if self._provider is None:
            self._provider = self.new_provider(self.model)
        return self.debug.wrap(self._provider) if self.debug.on else self._provider

    def new_provider(self, model: ResolvedModel) -> Provider:
        """A provider of its own for `model` (the title pass's); the caller closes it."""
        from iota.providers import make_provider

        provider = model.provider
        return make_provider(provider.name, provider.type, settings.api_key(provider, self.cwd),
                             settings.base_url(provider, self.cwd), region=provider.region,
                             project_id=provider.project_id)

    def sessions_bucket(self) -> Path:
        """Where this chat's sessions live: per project in agent mode, else the flat directory."""
        return paths.project_sessions_dir(self.project_root) if self.mode == "agent" else paths.sessions_dir()

    def new_session(self, title: str | None = None, parent: str | None = None,
                    bucket: Path | None = None) -> Session:
        """A session for this chat (under `parent` in the tree, for a fork), written at its first
        append; in `bucket` when given (a helper's run goes beside its caller's session)."""
        from iota.sessions.bundle import Session

        return Session.new(bucket or self.sessions_bucket(), **self.model.meta_fields(), cwd=str(self.project_root),
                           agent=self.agent.name, title=title, parent=parent)

    def switch_model(self, name: str) -> None:
        """`/model`: another model for the rest of this process; the agent's layered parameters
        still apply, and a value set by hand in /model stays where the new model's config says
        nothing. The config on disk is not changed."""
        self.model = params.carry_over(self.model, settings.resolve_model(self.config, self.agent, name))
        if self._provider is not None:
            self._retired.append(self._provider)
        self._provider = None

    async def aclose(self) -> None:
        """Close the providers' connections (at the end of the chat)."""
        for provider in [*self._retired, *([self._provider] if self._provider else [])]:
            with trio.move_on_after(2, shield=True):
                await provider.aclose()
        self._retired.clear()

    def system_prompt(self) -> str:
        toolsets = tuple(self.agent.tools.named) + (("memory",) if self.mode == "bot" else ())
        return compose(PromptContext(
            project_root=self.project_root, cwd=self.cwd, mode=self.mode, instructions=self.instructions,
            toolsets=toolsets, config_lines=self.config_lines(), host_lines=self.host_lines,
            skills=self.skills, memory_block=self.memory_block, notes_catalog=self.notes_catalog,
            journal=self.journal,
        ))

    def config_lines(self) -> list[str]:
        if self.config.explicit_file is not None:
            return [f"config: {self.config.explicit_file} (given with -c; the only scope)"]
        return [f"user config: {self.config.user_file or '(absent)'}",
                f"project config: {self.config.project_file or '(absent)'}"]

    def request(self, messages: list[Message], toolbox: Toolbox) -> Request:
        return Request(model=self.model.id, system=self.system_prompt(), messages=messages, tools=toolbox.specs(),
                       temperature=self.model.temperature, top_p=self.model.top_p, effort=self.model.effort)

    @asynccontextmanager
    async def open_tools(self, job_notices: trio.MemorySendChannel | None = None) -> AsyncIterator[Toolbox]:
        """The chat's toolbox. Background shell jobs and MCP servers live as long as this context:
        leaving it kills them. The jobs' completion notices go to `job_notices` (dropped when None)."""
        async with self._open_builtin_tools(job_notices) as toolbox, self._open_mcp(toolbox):
            yield toolbox

    @asynccontextmanager
    async def _open_mcp(self, toolbox: Toolbox) -> AsyncIterator[None]:
        """The agent's MCP servers, starting in the background (`toolbox.mcp` is their hub). A
        headless turn is sent once, so it waits until each server is ready or has failed. The
        tools of servers with `defer:` wait behind a search, in the way the model of this moment
        speaks (iota.mcp.defer): a later /model switch keeps it."""
        # A confined chat starts none: an agent naming one was refused, `all of them` is none.
        servers = [] if self.confinement is not None else servers_for_run(self.config, self.agent, self.mcp_flags)
        if not servers:
            yield
            return
        from iota.mcp.hub import open_mcp

        deferred = [server for server in servers if server.defer]
        if deferred:
            from iota.mcp.defer import Deferral, DeferredGroup

            Deferral([DeferredGroup(server.name, server.defer) for server in deferred], self.model.defer_mode, toolbox)

        def note(text: str, warning: bool) -> None:
            if warning:
                self.warnings.append(text)

        async with open_mcp(servers, self.cwd, toolbox, self.on_mcp_event or note) as hub:
            toolbox.mcp = hub
            if not self.interactive:
                await hub.wait_settled()
            yield

    @asynccontextmanager
    async def _open_builtin_tools(self, job_notices: trio.MemorySendChannel | None) -> AsyncIterator[Toolbox]:
        toolbox = Toolbox()
        tools = self.agent.tools
        if tools.code is not None:
            from iota.tools.code.toolset import code_tools

            for tool in code_tools(self.project_root, read_only=tools.code.read_only,
                                   auto_write=tools.code.auto_write):
                toolbox.add(tool)
        if self.mode in ("agent", "bot") and tools.skills and self.skills:
            from iota.tools.skills import LoadSkill

            toolbox.add(LoadSkill(self.skills))
        for tool in self.extra_tools:
            toolbox.add(tool)
        if self.interactive and tools.ask and self.asker is not None:
            from iota.tools.ask import ask_tools  # only a chat has someone to ask

            for tool in ask_tools(self.asker):
                toolbox.add(tool)
        async with AsyncExitStack() as stack:
            if tools.delegate is not None and tools.delegate.agents:
                if job_notices is not None:   # someone reads the notices: helpers can run in the background
                    from iota.delegation import open_background_helpers

                    toolbox.helpers = await stack.enter_async_context(open_background_helpers(job_notices))
                toolbox.add(self._delegate_tool(toolbox))
            async with self._open_shell(toolbox, job_notices):
                yield toolbox

    @asynccontextmanager
    async def _open_shell(self, toolbox: Toolbox, job_notices: trio.MemorySendChannel | None) -> AsyncIterator[None]:
        tools = self.agent.tools
        if tools.shell is None:
            yield
            return
        from iota.tools.jobs import open_job_table
        from iota.sandbox.environment import EnvironmentPolicy
        from iota.sandbox.bwrap import Sandbox, probe_sandbox, startup_warnings
        from iota.tools.shell import ShellTool

        shell = tools.shell
        write = shell_write_paths(shell, self.cwd)
        if job_notices is None:  # nobody reads them: an unbounded channel never blocks a job
            job_notices, _ = trio.open_memory_channel(math.inf)
        async with open_job_table(job_notices) as jobs:
            sandbox = None
            if shell.sandbox == "auto":
                sandbox = await probe_sandbox(self.project_root, network=shell.network, write=write,
                                              scratch=jobs.scratch_dir, logs=jobs.log_dir, cwd=self.cwd,
                                              limits=shell.limits)
            if self.confinement is not None and not isinstance(sandbox, Sandbox):
                raise self.confinement.refuse(f"its commands need a sandbox, and there is none here ({sandbox.reason})")
            self.warnings.extend(startup_warnings(sandbox, auto_run=shell.auto_run))
            toolbox.jobs = jobs
            sandboxed = isinstance(sandbox, Sandbox)
            confinement = Confinement(self.project_root, shell.network, tuple(write), self._project_pin(),
                                      tuple(shell.env_keep), shell.limits) if sandboxed else None
            environment = EnvironmentPolicy(shell.env_keep, frozenset(settings.secret_variables(self.config)))
            withheld = environment.notice()
            if withheld is not None:
                self.warnings.append(withheld)
            tool = ShellTool(root=self.project_root, jobs=jobs, sandbox=sandbox if sandboxed else None,
                             auto_run=shell.auto_run, iota_executable=shutil.which("iota") or sys.argv[0],
                             confinement=confinement,
                             environment=environment)
            if tool.writable_code is not None:
                self.warnings.append(f"iota's own code is where sandboxed commands can write ({tool.writable_code}): "
                                     "its commands (iota run -m, iota mcp …) stay in the sandbox")
            toolbox.add(tool)
            yield


    def _delegate_tool(self, toolbox: Toolbox):
        """The `delegate` tool of this chat; its helpers share `toolbox`'s MCP servers (those the
        helper may use), since a helper starts none of its own."""
        from iota.tools.delegate import DelegateTool

        options = self.agent.tools.delegate
        described = {name: self.config.agents[name].description or "" for name in options.agents}
        definitions = None
        if self.mode == "bot":   # a bot may define narrower agents for later use (seed 003)
            from iota.bots.bot import bot_dir
            from iota.bots.defined_agents import defined_agents
            from iota.delegation import BotDefinitions

            directory = bot_dir(self.agent.name)
            self.defined_agents = defined_agents(directory, self.agent, self.config, self.warnings)
            described.update({name: entry.description or "" for name, entry in self.defined_agents.items()})
            definitions = BotDefinitions(directory, self.agent, self.config, self.defined_agents.__setitem__)
        return DelegateTool(described, partial(self._run_helper, toolbox), options.max_parallel,
                            toolbox.helpers.start if toolbox.helpers is not None else None, definitions)

    async def _run_helper(self, toolbox: Toolbox, name: str, task: str):
        from iota.delegation import run_helper

        helper = self.helper_setup(name)
        servers = helper.agent.mcp_servers

        @asynccontextmanager
        async def open_tools() -> AsyncIterator[Toolbox]:
            async with helper._open_builtin_tools(None) as tools:
                for tool in toolbox:   # the caller's MCP tools of the servers the helper may use
                    server = getattr(tool, "server", None)
                    if server is not None and (servers is None or server in servers):
                        tools.add(tool)
                yield tools

        return await run_helper(helper, name, task, open_tools, parent=self.caller_session(),
                                save=not helper.agent.no_save, kept=self.on_helper_session)

    def helper_setup(self, name: str) -> ChatSetup:
        """The setup of the helper `name` when this chat hands it a task: its entry narrowed by
        this chat's (iota.config.delegation), its own model and instructions, this chat's project
        and cwd. It asks the person nothing through the ask tools (several helpers may run at once)."""
        from iota.config.delegation import narrow_helper

        entry = self.config.agents[name] if name in self.config.agents else self.defined_agents[name]
        agent = narrow_helper(entry, self.agent)
        bot = None  # a helper has no bot memory of its own: narrow_helper runs a bot entry as an agent
        skills, _ = discover(self.project_root, bot) if agent.mode == "agent" and agent.tools.skills else ([], [])
        return ChatSetup(config=self.config, agent=agent, model=settings.resolve_model(self.config, agent),
                         project_root=self.project_root, cwd=self.cwd,
                         instructions=read_instructions(self.config, agent, self.cwd, None),
                         interactive=self.interactive, skills=skills, confinement=self.confinement)

    def _project_pin(self) -> ProjectPin:
        """The project file this chat's config was read with, for the iotas its commands start."""
        if self.config.project_file is None:
            return ProjectPin()
        return ProjectPin(Path(os.path.abspath(self.config.project_file)), self.config.project_sha256)


def prepare_chat(loaded: Config, agent: AgentConfig, cwd: Path, *, model_override: str | None = None,
                 system_override: str | None = None, replay: dict | None = None,
                 interactive: bool = True, mcp_flags: list[str] | None = None) -> ChatSetup:
    """Settle everything a chat takes from the config. `replay` is a resumed session's meta,
    whose model and tuning are kept unless `-M` names another model: its layered parameters and
    their sources replay as recorded, not evaluated from the config again (iota.config.params)."""
    replayed = None
    if replay and not model_override and replay.get("provider") and replay.get("model"):
        model_override = replayed = _replayed_model(loaded, replay)
    model = settings.resolve_model(loaded, agent, model_override)
    if replayed is not None:
        model = params.replay(model, replay, entries.DEFAULT_CONTEXT_WINDOW)
    confinement = Confinement.from_environment(os.environ)
    if confinement is not None:
        enforce_confinement(confinement, loaded, agent, cwd, interactive=interactive, mcp_flags=mcp_flags or [])
        root = confinement.root
    else:
        root = paths.project_root(cwd) if agent.mode in ("agent", "bot") else Path(os.path.abspath(cwd))
    bot = agent.name if agent.mode == "bot" else None
    skills, warnings = discover(root, bot) if agent.mode in ("agent", "bot") and agent.tools.skills else ([], [])
    return ChatSetup(config=loaded, agent=agent, model=model, project_root=root, cwd=Path(os.path.abspath(cwd)),
                     instructions=read_instructions(loaded, agent, cwd, system_override), interactive=interactive,
                     skills=skills, warnings=warnings, mcp_flags=list(mcp_flags or []), confinement=confinement)


def enforce_confinement(confinement: Confinement, loaded: Config, agent: AgentConfig, cwd: Path, *,
                        interactive: bool, mcp_flags: list[str]) -> None:
    """Refuse, in one line, a chat that would be less confined than the iota that started this one."""
    confinement.check_cwd(cwd)
    if interactive:
        raise confinement.refuse(HEADLESS_ONLY)
    if loaded.explicit_file is not None:
        raise confinement.refuse("-c is refused (a config of its own could unconfine it)")
    if mcp_flags:
        raise confinement.refuse("--mcp is refused (the server would run outside the sandbox)")
    if agent.mcp_servers:
        raise confinement.refuse(f"agents.{agent.name}.mcp_servers is refused (an MCP server would run outside "
                                 "the sandbox, and its tools do not ask)")
    shell = agent.tools.shell
    if shell is not None:
        from iota.sandbox.bwrap import writable_paths

        confinement.check_shell(sandbox=shell.sandbox, network=shell.network,
                                writable=writable_paths(confinement.root, shell_write_paths(shell, cwd)),
                                allowed=writable_paths(confinement.root, confinement.write), env_keep=shell.env_keep,
                                limits=shell.limits)


def shell_write_paths(shell: entries.ShellOptions, cwd: Path) -> list[str]:
    """The shell set's `write:` paths: `~` and `${…}` expanded, made absolute, empties dropped."""
    expanded = (settings.expand(os.path.expanduser(path.strip()), cwd) for path in shell.write)
    return [os.path.normpath(os.path.abspath(path)) for path in expanded if path]


def _replayed_model(loaded: Config, meta: dict) -> str | None:
    """The config's name for the model a session was recorded with, if the config still has it."""
    for name, model in loaded.models.items():
        if model.provider == meta["provider"] and model.id == meta["model"]:
            return name
    reference = f"{meta['provider']}:{meta['model']}"
    return reference if meta["provider"] in loaded.providers else None

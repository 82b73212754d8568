"""Nothing accepted in silence: every key the config audit accepts changes what a run does.

The table below has one case per key path the audit's tables accept (the first test fails when
a key is added to them without a case here). Each case loads a config without the key and one
with it, and asks both the same question of the run they would make — the request a model is
sent, the tools a chat opens, what `iota run` refuses, what a command prints — and the answers
must differ. A key of a feature not built yet must be refused as `not supported yet`.
"""

from __future__ import annotations

import copy
import dataclasses
import socket
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
import yaml

from actors import notifier
from actors.titler import title_model
from iota import hosts
from iota.hosts import PingKind
from iota import paths
from iota.bots.bot import bot_memory
from iota.chat import prepare_chat
from iota.config import audit, settings
from iota.errors import IotaError
from iota.mcp.auth import configured_client, connection_auth
from iota.mcp.connection import stdio_parameters
from iota.mcp.login import login
from iota.mcp.servers import endpoint, expanded, servers_for_run
from iota.messages import USER, Message
from iota.providers.anthropic import AnthropicProvider
from iota.providers.openai import OpenAIProvider
from iota.tools.base import Toolbox
from ui.commands.config import run_refusals
from ui.commands.listing import render_listing

# A config every case starts from: one OpenAI provider, one model, one agent `a`, one HTTP and
# one stdio MCP server (the stdio command does not exist: a chat's start finds that at once).
BASE = {
    "providers": {"p": {"type": "openai", "key": "k"}},
    "models": {"m": {"provider": "p", "id": "gpt"}},
    "agents": {"a": {"model": "m"}},
    "mcp_servers": {"web": {"url": "http://127.0.0.1:9/mcp"}, "local": {"command": "no-such-mcp-server"}},
}

Probe = Callable[[settings.Config, Path], Awaitable[Any]]


@dataclasses.dataclass
class Case:
    path: str                                   # the key, as the audit knows it: `models.top_p`
    set_key: Callable[[dict], None]             # writes the key into a copy of the case's base
    probe: Probe                                # what the run does, asked of both configs
    base: Callable[[dict], None] = lambda document: None  # what the key needs around it
    needs_sandbox: bool = False                 # the key's effect is the sandbox's


def chat(loaded, cwd, agent="a", interactive=False):
    return prepare_chat(loaded, loaded.agents[agent], cwd, interactive=interactive)


def request_of(loaded, cwd):
    setup = chat(loaded, cwd)
    request = setup.request([Message(USER, content="hi")], Toolbox())
    return (request.model, request.temperature, request.top_p, request.effort, setup.model.context_window,
            setup.model.provider.name)


async def request_probe(loaded, cwd):
    return request_of(loaded, cwd)


async def provider_probe(loaded, cwd):
    """Where the chat's provider sends a request, and with which credentials."""
    setup = chat(loaded, cwd)
    try:
        provider = setup.provider()
        url, _ = provider.encode(setup.request([Message(USER, content="hi")], Toolbox()))
        # The clouds sign with credentials this machine has not got; their URL says it all.
        keyed = isinstance(provider, (AnthropicProvider, OpenAIProvider))
        headers = await provider.headers(url, b"{}") if keyed else {}
        return type(provider).__name__, url, headers.get("authorization")
    except (IotaError, TypeError) as error:
        return f"refused: {error}"


async def toolbox_probe(loaded, cwd, *, interactive=False, agent="a"):
    setup = chat(loaded, cwd, agent=agent, interactive=interactive)
    if interactive:
        setup.asker = object()  # the chat sets one before it opens its tools
    async with setup.open_tools() as toolbox:
        return ([spec.name for spec in toolbox.specs()], [(tool.name, tool.approval_request({"command": "ls",
                 "path": "a.txt", "content": "x"}) is not None) for tool in toolbox], setup.warnings)


async def shell_probe(loaded, cwd):
    setup = chat(loaded, cwd)
    async with setup.open_tools() as toolbox:
        shell = toolbox.get("shell")
        sandbox = shell.sandbox
        return (sandbox is not None, sandbox.network if sandbox else None, sandbox.writable if sandbox else None,
                sandbox.limits if sandbox else None, shell.environment.allowed("AWS_SECRET_ACCESS_KEY"),
                shell.approval_request({"command": "ls"}) is None,
                setup.warnings)


async def delegate_probe(loaded, cwd):
    """The helpers the delegate tool offers, how many run at once, and whether helper `h` may
    delegate in turn."""
    setup = chat(loaded, cwd)
    async with setup.open_tools() as toolbox:
        tool = toolbox.get("delegate")
        return (tool.parameters["properties"]["agent"]["enum"], tool.max_parallel,
                setup.helper_setup("h").agent.tools.delegate is not None)


async def refusals_probe(loaded, cwd):
    return run_refusals(loaded, cwd)


async def instructions_probe(loaded, cwd):
    setup = chat(loaded, cwd)
    return setup.instructions, setup.mode, setup.sessions_bucket()


async def memory_probe(loaded, cwd):
    """Which memory files bot `a`'s requests carry (bot `main` has written its MEMORY.md)."""
    main = paths.bots_dir() / "main"
    main.mkdir(parents=True, exist_ok=True)
    (main / "MEMORY.md").write_text("# main memory\n## User\n- Likes tea\n")
    return [source.label for source in bot_memory("a", loaded, cwd).sources()]


async def journal_probe(loaded, cwd):
    """What bot `a`'s chat is given of its journal: the recall tool, and the prompt's guidance."""
    from contextlib import ExitStack

    from ui.chat_parts import open_chat
    from ui.cli import build_parser

    with ExitStack() as cleanup:
        parts = open_chat(build_parser().parse_args(["run", "a"]), loaded, cleanup)
        return [tool.name for tool in parts.setup.extra_tools], "<journal>" in parts.setup.system_prompt()


async def listing_probe(loaded, cwd):
    return render_listing(loaded, "agents"), render_listing(loaded, "models", "a")


async def servers_probe(loaded, cwd):
    return [(server.name, endpoint(server)) for server in servers_for_run(loaded, loaded.agents["a"], [])]


async def stdio_probe(loaded, cwd):
    parameters = stdio_parameters(expanded(loaded.mcp_servers["local"], cwd), cwd)
    return parameters.command, parameters.args, parameters.env


async def http_probe(loaded, cwd):
    server = expanded(loaded.mcp_servers["web"], cwd)
    return server.url, server.headers


async def auth_probe(loaded, cwd):
    """What a chat's connection authenticates with, no login having happened."""
    server = expanded(loaded.mcp_servers["web"], cwd)
    try:
        auth = connection_auth(server)
    except IotaError as error:
        return f"refused: {error}"
    client = configured_client(server, "http://127.0.0.1/callback")
    return auth, client and (client.client_id, client.client_secret, client.token_endpoint_auth_method)


async def login_probe(loaded, cwd):
    """How a login of the HTTP server starts when port 47251 is taken."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 47251))
        taken.listen()
        try:
            with trio.fail_after(30):
                await login(loaded.mcp_servers["web"], cwd, lambda line: None, lambda url: None)
        except IotaError as error:
            return str(error).split(":")[0]


async def title_probe(loaded, cwd):
    """The model the title pass asks."""
    return title_model(chat(loaded, cwd)).id


async def notify_probe(loaded, cwd):
    """Whether a turn's end pings the person's terminal (the agent's notify: reaches the notifier)."""
    written: list[bytes] = []

    async def write(data: bytes) -> None:
        written.append(data)

    link, receive = notifier.open_host_link()
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(notifier.run, receive, hosts.Host(), notify=loaded.agents["a"].notify,
                                    write_terminal=write))
        link.notify(PingKind.TURN_ENDED, "done")
        link.close()
    return written


async def bot_work_probe(loaded, cwd):
    """What a bot does after a clean turn while a task has a step to do (auto_continue:), and the
    zone its schedules' approval names (timezone:)."""
    from types import SimpleNamespace

    from actors.bot_work import open_bot_work
    from actors.lane import Inbox
    from iota.agent import Turn
    from iota.bots.tasks import TaskBook

    bot_dir = cwd / f"bot-{len(list(cwd.glob('bot-*')))}"
    TaskBook(bot_dir).create("Job", ["a", "b"])
    work = open_bot_work(chat(loaded, cwd), bot_dir)
    lane = SimpleNamespace(last_turn=Turn(), inbox=Inbox(), interruptions=0, emit=lambda event: None,
                           notice=lambda text, warning=False: None, show_status=lambda: None)
    for after in work.after_turn:
        await after(lane)
    schedule = next(tool for tool in work.tools if tool.name == "schedule")
    asked = schedule.approval_request({"action": "create", "title": "t", "prompt": "p", "timetable": "daily 09:00"})
    return [job.name for job in lane.inbox], asked.detail.splitlines()[1]


async def upkeep_probe(loaded, cwd):
    """After which of six typed turns bot `a` queues its upkeep (upkeep:, upkeep_every:), and the
    model it would ask (upkeep_model:)."""
    from contextlib import ExitStack
    from types import SimpleNamespace

    from actors.lane import Inbox
    from iota.agent import Turn
    from ui.chat_parts import open_chat
    from ui.cli import build_parser

    with ExitStack() as cleanup:
        parts = open_chat(build_parser().parse_args(["run", "a"]), loaded, cleanup)
        upkeep = next(hook.__self__ for hook in parts.after_turn if type(hook.__self__).__name__ == "Upkeep")
        lane = SimpleNamespace(last_turn=Turn(), inbox=Inbox(), show_status=lambda: None)
        for turn in range(1, 7):
            await upkeep.before_send(lane, Message(USER, f"message {turn}"))
            await upkeep.after_turn(lane)
            if len(lane.inbox):
                return turn, upkeep.model().id
        return None, upkeep.model().id


def key(section: str, entry: str, **values) -> Callable[[dict], None]:
    def set_key(document: dict) -> None:
        document.setdefault(section, {}).setdefault(entry, {}).update(values)
    return set_key


def tools(**sets) -> Callable[[dict], None]:
    def set_tools(document: dict) -> None:
        document["agents"]["a"].setdefault("tools", {}).update(copy.deepcopy(sets))
    return set_tools


def both(*changes: Callable[[dict], None]) -> Callable[[dict], None]:
    def apply(document: dict) -> None:
        for change in changes:
            change(document)
    return apply


def skill(document: dict) -> None:
    document["agents"]["a"]["mode"] = "agent"


CASES = [
    # providers
    Case("providers.type", key("providers", "p", type="anthropic"), provider_probe),
    Case("providers.key", key("providers", "p", key="sk-other"), provider_probe),
    Case("providers.url", key("providers", "p", url="http://127.0.0.1:9/v1"), provider_probe),
    Case("providers.region", key("providers", "p", region="eu-west-1"), provider_probe,
         base=both(key("providers", "p", type="bedrock"), lambda d: d["providers"]["p"].pop("key"))),
    Case("providers.project_id", key("providers", "p", project_id="my-project"), provider_probe,
         base=both(key("providers", "p", type="vertex", region="us-east5"), lambda d: d["providers"]["p"].pop("key"))),
    # models
    Case("models.provider", key("models", "m", provider="q"), request_probe,
         base=key("providers", "q", type="openai")),
    Case("models.id", key("models", "m", id="gpt-other"), request_probe),
    Case("models.context_window", key("models", "m", context_window="32k"), request_probe),
    Case("models.defer_mode", key("models", "m", defer_mode="reference"), toolbox_probe,
         base=both(key("providers", "p", type="anthropic"), key("mcp_servers", "local", defer="Local things"))),
    Case("models.effort", key("models", "m", effort="high"), request_probe),
    Case("models.temperature", key("models", "m", temperature=0.3), request_probe),
    Case("models.top_p", key("models", "m", top_p=0.5), request_probe),
    Case("models.reports_usage", key("models", "m", reports_usage=False), refusals_probe,
         base=key("agents", "a", mode="bot")),
    Case("models.supports_tools", key("models", "m", supports_tools=False), refusals_probe,
         base=key("agents", "a", mode="bot")),
    # agents
    Case("agents.model", key("agents", "a", model="n"), request_probe, base=key("models", "n", provider="p", id="x")),
    Case("agents.choices", key("agents", "a", choices=["n"]), listing_probe,
         base=key("models", "n", provider="p", id="x")),
    Case("agents.system", key("agents", "a", system="Be brief."), instructions_probe),
    Case("agents.system_file", key("agents", "a", system_file="${cwd}/prompt.md"), instructions_probe),
    Case("agents.tools", key("agents", "a", tools={"code": None}), toolbox_probe),
    Case("agents.mcp_servers", key("agents", "a", mcp_servers=["web"]), servers_probe),
    Case("agents.mode", key("agents", "a", mode="agent"), instructions_probe),
    Case("agents.no_save", key("agents", "a", no_save=True), refusals_probe, base=key("agents", "a", mode="bot")),
    Case("agents.notify", key("agents", "a", notify=False), notify_probe),
    Case("agents.inherit", key("agents", "a", inherit=["main"]), memory_probe,
         base=both(key("agents", "a", mode="bot"), key("agents", "main", mode="bot", model="m"))),
    Case("agents.journal", key("agents", "a", journal=False), journal_probe, base=key("agents", "a", mode="bot")),
    Case("agents.memory", key("agents", "a", memory=False), journal_probe, base=key("agents", "a", mode="bot")),
    Case("agents.description", key("agents", "a", description="Writes the docs"), listing_probe),
    Case("agents.context_window", key("agents", "a", context_window="64k"), request_probe),
    Case("agents.effort", key("agents", "a", effort="low"), request_probe),
    Case("agents.temperature", key("agents", "a", temperature=1.2), request_probe),
    Case("agents.top_p", key("agents", "a", top_p=0.9), request_probe),
    Case("agents.title_model", key("agents", "a", title_model="n"), title_probe,
         base=key("models", "n", provider="p", id="small")),
    Case("agents.auto_continue", key("agents", "a", auto_continue=0), bot_work_probe, base=key("agents", "a", mode="bot")),
    Case("agents.timezone", key("agents", "a", timezone="Asia/Tokyo"), bot_work_probe,
         base=key("agents", "a", mode="bot")),
    Case("agents.upkeep", key("agents", "a", upkeep=False), upkeep_probe, base=key("agents", "a", mode="bot")),
    Case("agents.upkeep_every", key("agents", "a", upkeep_every=2), upkeep_probe, base=key("agents", "a", mode="bot")),
    # The upkeep job refreshes the summary: queued after the second turn, not the fifth.
    Case("agents.summary_every", key("agents", "a", summary_every=2), upkeep_probe, base=key("agents", "a", mode="bot")),
    Case("agents.upkeep_model", key("agents", "a", upkeep_model="n"), upkeep_probe,
         base=both(key("agents", "a", mode="bot"), key("models", "n", provider="p", id="small"))),
    # toolsets
    Case("agents.tools.code", tools(code=None), toolbox_probe),
    Case("agents.tools.code.read_only", tools(code={"read_only": True}), toolbox_probe, base=tools(code=None)),
    Case("agents.tools.code.auto_write", tools(code={"auto_write": True}), toolbox_probe, base=tools(code=None)),
    Case("agents.tools.shell", tools(shell=None), toolbox_probe),
    Case("agents.tools.shell.sandbox", tools(shell={"sandbox": "off"}), shell_probe, base=tools(shell=None)),
    Case("agents.tools.shell.network", tools(shell={"network": True}), shell_probe, base=tools(shell=None),
         needs_sandbox=True),
    # Without a sandbox every command asks, unless auto_run (with one, only a call of iota itself asks).
    Case("agents.tools.shell.auto_run", tools(shell={"sandbox": "off", "auto_run": True}), shell_probe,
         base=tools(shell={"sandbox": "off"})),
    Case("agents.tools.shell.write", tools(shell={"write": ["${cwd}/out"]}), shell_probe, base=tools(shell=None),
         needs_sandbox=True),
    Case("agents.tools.shell.env_keep", tools(shell={"env_keep": ["AWS_*"]}), shell_probe, base=tools(shell=None)),
    Case("agents.tools.shell.limits", tools(shell={"limits": {"processes": 99}}), shell_probe, base=tools(shell=None),
         needs_sandbox=True),
    Case("agents.tools.skills", tools(skills=False), toolbox_probe, base=skill),
    Case("agents.tools.ask", tools(ask=False), lambda loaded, cwd: toolbox_probe(loaded, cwd, interactive=True)),
    Case("agents.tools.delegate", tools(delegate={"agents": ["h"]}), toolbox_probe, base=key("agents", "h", model="m")),
    *(Case(f"agents.tools.delegate.{name}", tools(delegate={"agents": ["h"], name: value}), delegate_probe,
           base=both(tools(delegate={"agents": ["h"]}), key("agents", "h", model="m", tools={"delegate": {"agents": ["g"]}}),
                     key("agents", "g", model="m")))
      for name, value in (("agents", ["h", "g"]), ("max_parallel", 1), ("max_depth", 2))),
    # MCP servers
    Case("mcp_servers.command", key("mcp_servers", "local", command="other-server"), stdio_probe),
    Case("mcp_servers.args", key("mcp_servers", "local", args=["--stdio"]), stdio_probe),
    Case("mcp_servers.env", key("mcp_servers", "local", env={"TZ": "UTC"}), stdio_probe),
    Case("mcp_servers.url", key("mcp_servers", "web", url="http://127.0.0.1:10/mcp"), http_probe),
    Case("mcp_servers.headers", key("mcp_servers", "web", headers={"Authorization": "Bearer x"}), http_probe),
    Case("mcp_servers.auth", key("mcp_servers", "web", auth="oauth"), auth_probe),
    Case("mcp_servers.client_id", key("mcp_servers", "web", client_id="iota-app"), auth_probe),
    Case("mcp_servers.client_secret", key("mcp_servers", "web", client_secret="s3cret"), auth_probe,
         base=key("mcp_servers", "web", client_id="iota-app")),
    Case("mcp_servers.redirect_port", key("mcp_servers", "web", redirect_port=47251), login_probe),
    Case("mcp_servers.defer", key("mcp_servers", "local", defer="Local things"), toolbox_probe),
]

# Keys of features not built yet, each refused as such.
NOT_YET = {f"models.{name}": key("models", "m", **{name: True}) for name in audit.NOT_SUPPORTED_YET["models"]}


def accepted_paths() -> set[str]:
    """Every key path the audit accepts."""
    paths = {f"{section}.{name}" for section, names in (("providers", audit.PROVIDER_KEYS), ("models", audit.MODEL_KEYS),
                                                          ("agents", audit.AGENT_KEYS), ("mcp_servers", audit.MCP_KEYS))
             for name in names}
    for toolset in audit.TOOLSETS:
        paths.add(f"agents.tools.{toolset}")
        paths.update(f"agents.tools.{toolset}.{option}" for option in audit.TOOLSET_KEYS[toolset])
    return paths


def load(tmp_path: Path, document: dict) -> settings.Config:
    path = tmp_path / "iota.yaml"
    path.write_text(yaml.safe_dump(document))
    return settings.load(tmp_path, path)


def test_every_accepted_key_has_a_case_and_every_key_not_built_yet_is_refused():
    assert {case.path for case in CASES} == accepted_paths()
    assert set(NOT_YET) == {f"models.{name}" for name in audit.NOT_SUPPORTED_YET["models"]}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.path)
async def test_each_key_changes_what_a_run_does(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prompt.md").write_text("From the file.")
    skills = tmp_path / ".agents" / "skills" / "release"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: release\ndescription: Cut a release\n---\nSteps.\n")
    (tmp_path / ".git").mkdir()
    document = copy.deepcopy(BASE)
    case.base(document)
    without = await case.probe(load(tmp_path, document), tmp_path)
    case.set_key(document)
    with_key = await case.probe(load(tmp_path, document), tmp_path)
    if case.needs_sandbox and without[0] is False:
        pytest.skip("no sandbox on this machine: the key's effect is the sandbox's")
    assert with_key != without, f"{case.path} changed nothing: {with_key!r}"


@pytest.mark.parametrize("path", sorted(NOT_YET))
def test_a_key_of_a_feature_not_built_yet_is_refused(path, tmp_path):
    document = copy.deepcopy(BASE)
    NOT_YET[path](document)
    with pytest.raises(IotaError) as refused:
        load(tmp_path, document)
    name = path.split(".")[-1]
    assert str(refused.value) == f"config {tmp_path / 'iota.yaml'}: models.m.{name}: not supported yet"

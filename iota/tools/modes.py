"""The chat's permission modes, by name: what Shift+Tab cycles, `/mode` sets, `--mode` starts in,
and `iota.agent.Approvals` applies. Only names and words here, so the command line can offer
them without loading the agent loop.

    ask         the agent's config as written
    auto-edit   file changes land without asking; commands still follow auto_run
    plan        read-only: no file changes, no commands; the model is told it is planning
"""

from __future__ import annotations

ASK, AUTO_EDIT, PLAN = "ask", "auto-edit", "plan"
MODES = (ASK, AUTO_EDIT, PLAN)
MODE_MEANINGS = {
    ASK: "the agent's config as written",
    AUTO_EDIT: "file changes land without asking; commands follow auto_run",
    PLAN: "read-only: no file changes, no commands; the model plans",
}
# What the model reads before the next message when planning starts (and a headless plan run's opening).
PLAN_NOTICE = ("The person switched this chat to plan mode. It is read-only now: no file changes and no commands "
               "will run. Investigate with the read-only tools, then propose a plan and wait for the person; "
               "do not try to make the changes.")
PLAN_REFUSAL = ("{tool} was not run: the chat is in plan mode, which is read-only (no file changes, no commands). "
                "Read what you need, then propose the plan; the person leaves plan mode to let it run.")

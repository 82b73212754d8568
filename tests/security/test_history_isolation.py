"""The person's history stays out of the model's reach, attacked for real: a chat whose model
asks its sandboxed shell for `iota search` (not one of iota's self-calls, so it runs confined,
with ~/.iota out of sight) finds nothing of the sessions on disk, nor can it read the index."""

from __future__ import annotations

from iota import paths
from iota.sessions.bundle import Session
from tests.security.test_self_calls import World, world  # noqa: F401  (the fixture)
from tests.support.fake_model import fake_model  # noqa: F401  (the fixture the world needs)
from tests.support.turns import write_turn


async def test_iota_search_from_the_sandboxed_shell_sees_no_session(world: World):  # noqa: F811
    private = Session.create(paths.sessions_dir(), provider="fake", model="m", agent="default")
    write_turn(private, "my private pineapple password plan")
    private.close()

    searched = await world.parent_runs("iota search pineapple")
    assert "pineapple password" not in searched
    assert private.id not in searched

    read = await world.parent_runs(f"cat ~/.iota/sessions/{private.id}/messages.jsonl")
    assert "pineapple" not in read and "No such file or directory" in read

"""`/jobs` with no background job: there is nothing to show, and it says so."""

from __future__ import annotations

from actors.events import Notice
from tests.actors.test_lane import open_lane  # noqa: F401  (the fixture)


async def test_jobs_without_a_job_says_there_is_none(open_lane):
    async with open_lane() as chat:
        chat.command("jobs")
        notice = (await chat.until(Notice))[-1]
    assert notice == Notice("No background jobs are running.")

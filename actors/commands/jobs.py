"""`/jobs`: the background shell jobs, live — a row each (id, how long it has run, the command,
its last line of output), a page each (the command in full, its clock, pid, output file and last
twenty lines), and a Kill tab.

The command opens the face's browser (actors.events.JobsView) and reads the job table again
every second (JobsUpdate), so the clocks walk, a job that ends leaves the list, one that starts
joins it, and a page open on a job that ended says how it ended. What comes back is the jobs to
kill; each is stopped with its whole process group, and its notice — `[background job b3
finished: killed] …` — reaches the conversation as every job's does. Esc kills nothing.

With no job running there is nothing to show, and `/jobs` says so.
"""

from __future__ import annotations

import trio

from actors.events import JobsUpdate, JobsView
from actors.helpers import helper_lines
from actors.lane import Lane
from iota.tools.job_view import JobPage, job_pages
from iota.tools.jobs import JobTable

JOBS_HELP = "the background jobs: their output, and a Kill tab (while a job runs)"
REFRESH_SECONDS = 1.0


async def show_jobs(lane: Lane, argument: str) -> None:
    table = lane.toolbox.jobs
    helpers = helper_lines(lane)
    if helpers:   # background helpers (delegate): listed beside the shell's jobs; Ctrl+C stops them
        lane.notice("\n".join(helpers))
    if table is None or not table.running():
        if not helpers:
            lane.notice("No background jobs are running.")
        return
    lane.show_status()  # this job is out of the queue now
    send, receive = trio.open_memory_channel(1)
    lane.emit(JobsView(await _pages(table), send))
    answer = None
    try:
        while True:
            with trio.move_on_after(REFRESH_SECONDS):
                answer = await receive.receive()
                break
            lane.emit(JobsUpdate(await _pages(table), tuple(table.ended.items())))
    finally:
        lane.emit(JobsUpdate(closed=True))  # a cancelled /jobs takes its browser with it
    killed = [job_id for job_id in answer or () if table.kill(job_id)]
    if killed:
        lane.notice(f"Killing {', '.join(killed)}; each job's notice follows when it has ended")


async def _pages(table: JobTable) -> tuple[JobPage, ...]:
    return await trio.to_thread.run_sync(job_pages, table.running())

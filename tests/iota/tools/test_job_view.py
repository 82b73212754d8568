"""What /jobs reads of the job table: each job's page (its clock, pid, output's last lines), and
the Kill that stops a job's whole process group and leaves a notice saying so."""

from __future__ import annotations

import re

import trio

from iota.tools.job_view import TAIL_BYTES, job_pages, tail_lines
from tests.iota.tools.test_shell import open_shell, root  # noqa: F401  (the fixture)
from tests.iota.tools.test_shell import group_members


async def test_a_killed_job_stops_with_its_group_and_its_notice_says_killed(root):
    async with open_shell(root, sandboxed=False) as (shell, notices):
        await shell.run({"command": "echo started; sleep 300 & sleep 300; wait", "background": True})
        [job] = shell.jobs.running()
        with trio.fail_after(10):
            while not tail_lines(job.log_path):
                await trio.sleep(0.02)
        assert shell.jobs.kill("b1") and not shell.jobs.kill("b9")
        with trio.fail_after(10):
            notice = await notices.receive()
        assert notice.text == "[background job b1 finished: killed] echo started; sleep 300 & sleep 300; wait\nstarted\n"
        assert shell.jobs.ended == {"b1": "killed"}
        assert shell.jobs.running() == [] and group_members(job.pid) == []


async def test_a_jobs_page_has_its_clock_pid_output_file_and_last_lines(root):
    async with open_shell(root, sandboxed=False) as (shell, notices):
        await shell.run({"command": "for i in $(seq 1 30); do echo line $i; done; sleep 300", "background": True})
        [job] = shell.jobs.running()
        with trio.fail_after(10):
            while len(tail_lines(job.log_path)) < 20:
                await trio.sleep(0.02)
        [page] = job_pages(shell.jobs.running(), now=job.started + 72)
        assert (page.id, page.pid, page.log_path, page.elapsed) == ("b1", job.pid, str(job.log_path), "1m 12s")
        assert page.command == page.name == "for i in $(seq 1 30); do echo line $i; done; sleep 300"
        assert page.tail == tuple(f"line {n}" for n in range(11, 31)) and page.last_line == "line 30"
        assert re.fullmatch(r"\d\d:\d\d:\d\d", page.started_at)
        shell.jobs.kill("b1")


def test_the_tail_of_a_huge_log_reads_only_its_end(tmp_path):
    log = tmp_path / "big.log"
    log.write_bytes(b"x" * (10 * TAIL_BYTES) + b"\nsecond to last\nlast\n")
    assert tail_lines(log, 2) == ["second to last", "last"]
    assert tail_lines(tmp_path / "missing.log") == []

"""/jobs' browser, rendered as a person sees it, and the status row's job segment."""

from __future__ import annotations

from actors.events import JobsUpdate, Status
from iota.tools.job_view import JobPage
from ui.widgets.jobs import JobsBrowser
from ui.widgets.status import StatusRow, status_text
from tests.ui.widgets.test_widgets import rendered


def page(job_id: str, name: str, elapsed: str = "1m 12s", tail: tuple[str, ...] = ("ok",)) -> JobPage:
    return JobPage(job_id, name, name + "\n  --verbose" if job_id == "b3" else name, 4242, f"/tmp/jobs/{job_id}.log",
                   "14:02:11", elapsed, tail)


class Browser:
    def __init__(self, *jobs: JobPage):
        self.answers: list = []
        self.widget = JobsBrowser(jobs, self.answers.append)

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.widget.keypress((80,), key)

    def screen(self, cols: int = 80) -> list[str]:
        return rendered(self.widget, cols)


def test_the_list_has_a_row_per_job_with_its_clock_command_and_last_line():
    browser = Browser(page("b3", "cargo test", tail=("running 42 tests", "test result: ok")),
                      page("b4", "npm run dev", "3s", ()))
    assert browser.screen() == [
        "Background jobs   [Jobs]  Kill",
        "❯ b3  1m 12s  cargo test  │ test result: ok",
        "  b4  3s      npm run dev",
        "Enter: the job's page · Tab: Kill · Esc: close",
    ]


def test_enter_opens_the_page_and_esc_goes_back_then_closes():
    browser = Browser(page("b3", "cargo test", tail=("running 42 tests", "test result: ok")))
    browser.keys("enter")
    assert browser.screen() == [
        "b3 — cargo test",
        "cargo test",
        "  --verbose",
        "started 14:02:11 · running 1m 12s",
        "pid 4242 · output /tmp/jobs/b3.log",
        "│ running 42 tests",
        "│ test result: ok",
        "Esc: back to the list",
    ]
    browser.keys("esc")
    assert browser.screen()[0] == "Background jobs   [Jobs]  Kill"
    assert browser.answers == []
    browser.keys("esc")
    assert browser.answers == [None]


def test_kill_checks_jobs_with_space_and_enter_kills_them():
    browser = Browser(page("b3", "cargo test"), page("b4", "npm run dev"), page("b5", "make"))
    browser.keys("tab", " ", "down", "down", " ")
    assert browser.screen()[1:4] == ["  [x] b3  1m 12s  cargo test  │ ok", "  [ ] b4  1m 12s  npm run dev  │ ok",
                                     "❯ [x] b5  1m 12s  make  │ ok"]
    browser.keys("enter")
    assert browser.answers == [("b3", "b5")]


def test_enter_on_kill_with_nothing_checked_kills_the_job_under_the_cursor():
    browser = Browser(page("b3", "cargo test"), page("b4", "npm run dev"))
    browser.keys("tab", "down", "enter")
    assert browser.answers == [("b4",)]


def test_an_update_keeps_the_cursor_on_its_job_and_a_page_says_how_its_job_ended():
    browser = Browser(page("b3", "cargo test"), page("b4", "npm run dev"))
    browser.keys("down")
    browser.widget.update(JobsUpdate((page("b2", "sleep 9"), page("b3", "cargo test"), page("b4", "npm run dev"))))
    assert browser.screen()[3].startswith("❯ b4")
    browser.keys("enter")
    browser.widget.update(JobsUpdate((page("b2", "sleep 9"),), (("b4", "exit 0 after 1m 13s"),)))
    assert "finished: exit 0 after 1m 13s" in browser.screen()
    browser.keys("esc")
    assert browser.screen()[1].startswith("❯ b2")


def test_what_a_command_printed_is_shown_escaped():
    browser = Browser(page("b4", "printf x", tail=("\x1b]0;pwned\x07 title\r",)))
    assert browser.screen()[1] == "❯ b4  1m 12s  printf x  │ \\x1b]0;pwned\\x07 title\\r"


def test_the_status_row_ends_with_the_jobs_and_the_debug_mark():
    one = Status("sonnet", 0, 200_000, jobs=(("b3", "cargo test", 28.0),))
    assert status_text(one, now=100.0) == "sonnet · 0 / 200k (0%) · job b3 cargo test 1m 12s"
    several = Status("sonnet", 0, 200_000, jobs=(("b1", "make", 0.0), ("b2", "npm run dev", 50.0)), debug=True)
    assert status_text(several, now=181.0) == "sonnet · 0 / 200k (0%) · 2 jobs 3m 1s · debug"
    row = StatusRow(lambda: 100.0)
    row.show(one)
    assert row.timer_started == 28.0  # the clock walks while a job runs, the chat idle

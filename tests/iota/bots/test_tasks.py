"""A bot's tasks file (iota.bots.tasks): statuses, steps, the queue, refusals, hand edits and kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iota.bots.tasks import (TASKS_NAME, TaskBook, card_lines, next_runnable, open_tasks_block)
from iota.errors import ToolError

REPO = str(Path(__file__).resolve().parents[3])


@pytest.fixture
def book(tmp_path) -> TaskBook:
    return TaskBook(tmp_path)


def only(book: TaskBook):
    [task] = book.load()
    return task


def test_a_task_with_steps_is_kept_on_disk_one_line_each(book, tmp_path):
    result = book.create("Migrate CI", ["Inventory jobs", "Update workflows", "Verify"])
    task = only(book)
    assert len(task.id) == 26 and task.id in result  # a ULID made by iota
    assert task.status == "in_progress"
    assert [(s.n, s.title, s.status) for s in task.steps] == [
        (1, "Inventory jobs", "pending"), (2, "Update workflows", "pending"), (3, "Verify", "pending")]
    lines = (tmp_path / TASKS_NAME).read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["title"] == "Migrate CI"


def test_a_second_task_queues_behind_the_one_in_progress_and_starts_when_it_is_done(book):
    book.create("First", ["a"])
    book.create("Second", ["b"])
    first, second = book.load()
    assert (first.status, second.status) == ("in_progress", "pending")
    said = book.update_step(first.id, 1, "succeeded", note="went fine")
    first, second = book.load()
    assert first.status == "done" and second.status == "in_progress"
    assert "is done" in said and "Next in the queue" in said and second.id in said


def test_backlog_is_only_by_request_and_never_runnable(book):
    book.create("Someday", ["think"], status="backlog")
    assert only(book).status == "backlog"
    assert next_runnable(book.load()) is None
    assert open_tasks_block(book.load()) == ""


def test_runnable_until_a_step_is_blocked(book):
    book.create("Deploy", ["build", "get the key", "ship"])
    task = only(book)
    assert next_runnable([task]) is task and task.current.n == 1
    book.update_step(task.id, 1, "succeeded")
    book.update_step(task.id, 2, "blocked", note="needs the API key")
    task = only(book)
    assert not task.runnable and task.current.n == 2
    assert card_lines([task]) == ("Deploy · step 2/3 blocked · get the key",)
    book.update_step(task.id, 2, "in_progress")
    assert only(book).runnable


def test_steps_can_be_added_after_one_and_reordered_keeping_their_numbers(book):
    book.create("Write", ["draft", "publish"])
    task = only(book)
    book.add_steps(task.id[:6], ["review"], after=1)  # an id prefix is enough
    assert [s.title for s in only(book).steps] == ["draft", "review", "publish"]
    assert [s.n for s in only(book).steps] == [1, 3, 2]
    book.reorder(task.id, [3, 1, 2])
    assert [s.title for s in only(book).steps] == ["review", "draft", "publish"]


def test_a_task_set_done_cancels_its_open_steps(book):
    book.create("Try", ["one", "two"])
    task = only(book)
    said = book.update(task.id, status="done")
    assert [s.status for s in only(book).steps] == ["cancelled", "cancelled"]
    assert "2 open steps were marked cancelled" in said


@pytest.mark.parametrize("change, refusal", [
    (lambda book, t: book.update_step(t, 1, "done"), "a finished step is succeeded; done is for a whole task"),
    (lambda book, t: book.update_step(t, 9, "succeeded"), "has no step 9 (its steps: 1, 2)"),
    (lambda book, t: book.update(t, status="blocked"), "a step's status is not a task's"),
    (lambda book, t: book.update("zzz", status="done"), 'no task has the id "zzz"'),
    (lambda book, t: book.reorder(t, [1, 1]), "order must list each step number of the task once"),
    (lambda book, t: book.create("", ["x"]), "title is empty"),
    (lambda book, t: book.create("x", "not a list"), "steps must be a list of step titles"),
    (lambda book, t: book.create("x", [], status="done"), "a new task cannot be done already"),
    (lambda book, t: book.delete(t), "only a backlog task is deleted"),
])
def test_refusals_are_one_line_and_change_nothing(book, tmp_path, change, refusal):
    book.create("Job", ["a", "b"])
    before = (tmp_path / TASKS_NAME).read_bytes()
    with pytest.raises(ToolError) as caught:
        change(book, only(book).id)
    assert refusal in str(caught.value) and "\n" not in str(caught.value)
    assert (tmp_path / TASKS_NAME).read_bytes() == before


def test_the_person_deletes_a_backlog_task_and_stops_a_running_one(book):
    book.create("Park me", ["x"], status="backlog")
    book.create("Running", ["y"])
    parked, running = book.load()
    assert "Stopped task" in book.stop(running.id)
    assert [t.status for t in book.load()] == ["backlog", "backlog"]
    book.delete(parked.id)
    assert [t.title for t in book.load()] == ["Running"]


def test_a_line_a_person_broke_is_kept_verbatim_and_reported(book, tmp_path):
    book.create("Good", ["a"])
    path = tmp_path / TASKS_NAME
    path.write_text(path.read_text() + '{"id": "half a line\n')
    tasks = book.load()
    assert [t.title for t in tasks] == ["Good"]
    assert "line 2 is not a record iota can read" in book.warnings[0]
    book.update_step(tasks[0].id, 1, "in_progress")
    assert path.read_text().splitlines()[1] == '{"id": "half a line'


def test_the_open_tasks_block_names_the_current_step_and_what_is_queued(book):
    book.create("Migrate CI", ["inventory", "update"])
    book.create("Docs", ["write"])
    book.create("Someday", ["x"], status="backlog")
    block = open_tasks_block(book.load())
    assert block.startswith("[Open tasks")
    assert "Migrate CI" in block and "1. [pending] inventory  ← current" in block
    assert 'Queued: 1 pending ("Docs"); 1 in the backlog.' in block


# -- kill -9 in the middle of an update ---------------------------------------------------------

WRITER = """
import sys
from pathlib import Path
from iota.bots.tasks import TaskBook
book = TaskBook(Path(sys.argv[1]))
ids = [task.id for task in book.load()]
print("ready", flush=True)
n = 0
while True:
    n += 1
    for task_id in ids:
        book.update_step(task_id, 1 + n % 40, "in_progress" if n % 2 else "pending", note="x" * (n % 900))
"""


def test_tasks_survive_kill_9_in_the_middle_of_updates(book, tmp_path):
    """A writer that updates tasks as fast as it can is killed with SIGKILL at twelve moments;
    after each kill every task is still there, whole, and the file reads without a warning."""
    for i in range(8):
        book.create(f"Task {i}", [f"step {n}" for n in range(40)])
    names = {task.id: task.title for task in book.load()}
    for attempt in range(12):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE,
                                  env={**os.environ, "PYTHONPATH": REPO})
        assert writer.stdout.readline() == b"ready\n"
        time.sleep(0.005 + (attempt % 10) * 0.003)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        tasks = book.load()
        assert {task.id: task.title for task in tasks} == names
        assert all(len(task.steps) == 40 for task in tasks)
        assert book.warnings == []


def test_the_open_tasks_block_stays_small_however_much_is_in_progress(book):
    for n in range(8):
        book.create(f"Job {n}", [f"step {i}" for i in range(3)], status="in_progress")
    tasks = book.load()
    book.update_step(tasks[0].id, 1, "failed", note="x" * 900)
    block = open_tasks_block(book.load())
    assert block.count("Task \"Job") == 5 and "… and 3 more in progress" in block
    assert "x" * 159 + "…" in block and "x" * 160 not in block

"""`@path` in a message sends the file's contents to the provider, so a mention is judged as the
code tools judge the model's paths: a link out of the project, a FIFO, a directory that is a link
out, are never read. The project holds what the model and its commands made, so a `notes.md`
that is a link to a key must not be sent. The same attack in the chat, end to end:
tests/e2e/test_chat_habits.py::test_in_the_chat_a_link_out_is_not_attached_and_the_request_does_not_carry_it."""

from __future__ import annotations

import os

import pytest

from actors.mentions import read_mentions
from iota.tools.code.paths import Jail

SECRET = "AKIA-the-secret-key-material"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "credentials").write_text(SECRET + "\n")
    return root, outside


def test_a_mention_of_a_link_out_of_the_project_is_not_read(project):
    root, outside = project
    os.symlink(outside / "credentials", root / "notes.md")
    os.symlink(outside, root / "homelink")
    found = read_mentions(Jail(root), str(root), "see @notes.md and @homelink/credentials")
    assert [(m.named, m.attachment) for m in found] == [("notes.md", None), ("homelink/credentials", None)]
    assert all("outside the project root" in m.refusal for m in found)


def test_a_mention_of_a_fifo_answers_at_once_without_opening_it(project):
    root, _ = project
    os.mkfifo(root / "pipe")
    (found,) = read_mentions(Jail(root), str(root), "tail @pipe")
    assert found.attachment is None and found.refusal == "pipe is not a regular file"


def test_a_mention_climbing_out_with_dots_is_refused(project):
    root, _ = project
    (found,) = read_mentions(Jail(root), str(root), "@../home/credentials")
    assert found.attachment is None and "outside the project root" in found.refusal

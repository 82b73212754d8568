"""A running call's live line (a helper at work under its `delegate` call) in the transcript."""

from __future__ import annotations

from actors.events import ToolEnded, ToolProgress, ToolStarted
from tests.ui.widgets.test_widgets import attributes_of, rendered
from ui.widgets.transcript import Transcript


def test_the_live_line_is_replaced_by_each_newer_one_and_by_the_result():
    transcript = Transcript(None)
    transcript.apply(ToolStarted("d1", "delegate", "reviewer"))
    transcript.apply(ToolProgress("d1", "reviewer · read_file a.py · 2s"))
    transcript.apply(ToolProgress("d1", "reviewer · grep \x1b[31mTODO · 3s"))
    assert rendered(transcript, 50, 2) == ["• delegate reviewer", "  ⎿ reviewer · grep \\x1b[31mTODO · 3s"]
    assert attributes_of(transcript, 50, 2)[1][0][0] == "dim"
    transcript.apply(ToolEnded("d1", "delegate", "Fine.\n[reviewer: 2 turns]", None, False))
    assert rendered(transcript, 50, 3) == ["• delegate reviewer", "  ⎿ Fine.", "    [reviewer: 2 turns]"]


def test_a_live_line_of_a_call_this_face_never_saw_start_is_dropped():
    transcript = Transcript(None)
    assert transcript.apply(ToolProgress("nope", "reviewer · thinking · 1s"))
    assert rendered(transcript, 40, 1) == [""]


def test_a_helpers_conversation_shows_only_with_ctrl_o():
    transcript = Transcript(None)
    transcript.apply(ToolStarted("d1", "delegate", "reviewer"))
    transcript.apply(ToolEnded("d1", "delegate", "Fine.", None, False,
                               more="── reviewer's conversation ──\n❯ Read a.py.\n• read_file a.py"))
    assert rendered(transcript, 50, 3) == ["• delegate reviewer", "  ⎿ Fine.", "    … more (ctrl+o to expand)"]
    transcript.toggle_expanded()
    assert rendered(transcript, 50, 5) == ["• delegate reviewer", "  ⎿ Fine.", "    ── reviewer's conversation ──",
                                           "    ❯ Read a.py.", "    • read_file a.py"]

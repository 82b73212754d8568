"""Keys typed the moment `iota` starts, before its first screen, land in the composer: taking the
terminal must not flush what is waiting in it (end to end in tmux, against the fake model)."""

from __future__ import annotations

import re

from tests.e2e.conftest import IOTA, READY
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

PANE = "=test:"


def composer_holding(text: str) -> re.Pattern[str]:
    """The composer row holding `text`: its prompt right under the rule that closes the transcript."""
    return re.compile(rf"^─{{10,}}\n❯ {re.escape(text)}$", re.MULTILINE)


def test_a_word_typed_before_the_first_screen_lands_in_the_composer(iota, terminal):
    iota.write_config("  chat: {model: m}\n")
    screen = terminal.start([IOTA, "run", "chat"], cols=110, rows=32, env=iota.env(), cwd=iota.cwd)
    screen.type("early")
    # Python has not even finished starting: the screen is not iota's yet.
    assert screen._tmux("display-message", "-p", "-t", PANE, "#{alternate_on}").strip() == "0"
    screen.wait_for(READY)
    screen.wait_for(composer_holding("early"))
    screen.type(" bird")  # and the composer goes on from there
    screen.wait_for(composer_holding("early bird"))
    screen.send_keys("C-u", "C-d")
    assert screen.wait_for_exit() == 0

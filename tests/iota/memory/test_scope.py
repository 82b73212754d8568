"""Which memory files apply where: the front matter's include/exclude patterns for projects and bots
(exclude wins), matched with fnmatch against the project's name and path, and the front matters
that cannot be read, which keep the file out rather than let it go everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from iota.memory.scope import FrontMatterError, Scope, SessionName, read_scope

IOTA = Path("/work/iota")
WEB = Path("/work/clients/web-shop")


def scope_of(front: str) -> Scope:
    return read_scope(f"---\n{front}---\n# notes\n")[0]


def test_no_front_matter_applies_everywhere():
    scope, doc = read_scope("# notes\n- a line\n")
    assert scope.skips(IOTA, "coder") is None
    assert doc.body == ["# notes", "- a line"]


@pytest.mark.parametrize("front, project, applies", [
    ("include-project: iota\n", IOTA, True),
    ("include-project: iota\n", WEB, False),
    ("include-project: [iota, 'web-*']\n", WEB, True),            # a glob against the directory's name
    ("include-project: ['/work/clients/*']\n", WEB, True),        # against the absolute path
    ("include-project: ['/work/*']\n", WEB, True),                # `*` crosses `/`: any depth below /work
    ("include-project: ['Iota']\n", IOTA, False),                 # case counts
    ("include-project: ['io?a']\n", IOTA, True),
    ("include-project: ['[!i]o*']\n", IOTA, False),             # neither the name nor the path
    ("include-project: []\n", IOTA, False),                       # an empty list includes nothing
    ("include-project:\n", IOTA, True),                           # an empty key is no key
    ("exclude-project: 'web-*'\n", WEB, False),
    ("exclude-project: 'web-*'\n", IOTA, True),
    ("include-project: ['*']\nexclude-project: [web-shop]\n", WEB, False),   # exclude wins
    ("include-project: [web-shop]\nexclude-project: ['/work/clients/*']\n", WEB, False),
    ("include-project:\n  - iota\n  - web-shop\n", WEB, True),     # a YAML block list
])
def test_project_patterns(front, project, applies):
    assert (scope_of(front).skips(project, "coder") is None) == applies


def test_a_pattern_may_start_at_home(fake_home):
    project = fake_home / "work" / "iota"
    assert scope_of("include-project: ['~/work/*']\n").skips(project, "coder") is None
    assert scope_of("include-project: ['~/play/*']\n").skips(project, "coder") is not None


def test_bot_patterns_and_exclude_wins():
    scope = scope_of("include-bot: ['co*']\nexclude-bot: [coder-old]\n")
    assert scope.skips(IOTA, "coder") is None
    assert scope.skips(IOTA, "reviewer") == "include-bot (co*) does not match reviewer"
    assert scope.skips(IOTA, "coder-old") == 'exclude-bot "coder-old" matches coder-old'


def test_the_reasons_say_which_pattern_and_what_it_met():
    assert scope_of("exclude-project: 'web-*'\n").skips(WEB, "coder") == \
        'exclude-project "web-*" matches web-shop (/work/clients/web-shop)'
    assert scope_of("include-project: [iota, api]\n").skips(WEB, "coder") == \
        "include-project (iota, api) does not match web-shop (/work/clients/web-shop)"
    assert scope_of("include-project: []\n").skips(IOTA, "coder") == \
        "include-project (nothing) does not match iota (/work/iota)"


def test_numbers_and_dates_read_as_what_was_written():
    assert scope_of("include-project: [2026, 1.5]\n").include_project == ("2026", "1.5")


def test_describe_says_the_scope_as_written():
    assert scope_of("include-project: [iota, 'web-*']\nexclude-bot: x\n").describe() == \
        "include-project: iota, web-*; exclude-bot: x"
    assert scope_of("include-project: []\n").describe() == "include-project: []"
    assert scope_of("bot: coder\n").describe() == ""

KEYS = "include-project, exclude-project, include-bot, exclude-bot, include-session, exclude-session"


def test_session_patterns_match_the_id_or_the_title_and_exclude_wins():
    scope, _ = read_scope("---\ninclude-session: ['fix *', a1b2]\nexclude-session: '*-old'\n---\nbody\n")
    project = Path("/work/iota")
    assert scope.skips(project, "coder", SessionName("a1b2", "write docs")) is None            # by id
    assert scope.skips(project, "coder", SessionName("zz99", "fix the login")) is None         # by title
    assert scope.skips(project, "coder", SessionName("zz99", "fix it-old")) == \
        'exclude-session "*-old" matches session zz99 ("fix it-old")'                          # exclude wins
    assert scope.skips(project, "coder", SessionName("zz99", "")) == \
        "include-session (fix *, a1b2) does not match session zz99"
    assert scope.skips(project, "coder", None) == "include-session (fix *, a1b2) does not match this chat"
    excluded, _ = read_scope("---\nexclude-session: '*'\n---\nbody\n")
    assert excluded.skips(project, "coder", None) is None   # no session: nothing to exclude
    assert excluded.describe() == "exclude-session: *"


@pytest.mark.parametrize("text, message", [
    ("---\ninclude-project: [iota\n---\nbody\n", "its front matter is not valid YAML at line 3"),
    ("---\n- a\n- b\n---\nbody\n", "its front matter is not a mapping of keys"),
    ("---\ninclude-project: {a: 1}\n---\n", "its include-project: must be a glob pattern or a list of them, got "
                                            "{'a': 1}"),
    ("---\nexclude-project: [true]\n---\n", "its exclude-project: must be a glob pattern or a list of them, got "
                                            "[True]"),
    ("---\ninclude_project: iota\n---\n", "its front matter has include_project:, which is not a scope key (want "
                                          f"{KEYS})"),
    ("---\nexclude-sessions: ['main/*']\n---\n", "its front matter has exclude-sessions:, which is not a scope key "
                                                 f"(want {KEYS})"),
    ("---\ninclude-project: iota\nbody without a closing fence\n", "its front matter opens with --- and is never "
                                                                    "closed"),
])
def test_a_front_matter_that_cannot_be_read_is_an_error(text, message):
    with pytest.raises(FrontMatterError) as caught:
        read_scope(text)
    assert str(caught.value) == message


def test_other_keys_are_left_alone():
    scope, doc = read_scope("---\nbot: coder\nupdated: 2026-10-02\ntitle: mine\n---\nbody\n")
    assert scope == Scope()
    assert doc.owner() == "coder"

"""The `ask` toolset with a fake asker: what the model is told, what the person is asked, what
the model reads back, and which chats have the tools at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from iota.config import settings
from iota.chat import prepare_chat
from iota.tools.ask import (CHOOSE_PARAMETERS, DECLINED_TO_ANSWER, Answer, ChooseTool, ConfirmTool, Question,
                            ask_tools)
from iota.tools.base import Toolbox


class FakeAsker:
    """Records what it was asked and gives the scripted answers (None: the person declined)."""

    def __init__(self, *answers: Answer, declined: bool = False):
        self.answers = None if declined else answers
        self.asked: list[tuple[Question, ...]] = []

    async def __call__(self, questions: tuple[Question, ...]) -> tuple[Answer, ...] | None:
        self.asked.append(questions)
        return self.answers


def toolbox(asker: FakeAsker) -> Toolbox:
    return Toolbox(ask_tools(asker))


# ---- what the model sees -----------------------------------------------------------------------

def test_the_toolset_is_confirm_and_choose_with_their_schemas():
    tools = ask_tools(FakeAsker())
    assert [tool.name for tool in tools] == ["confirm", "choose"]
    assert tools[0].spec().parameters["required"] == ["question"]
    questions = CHOOSE_PARAMETERS["properties"]["questions"]
    assert (questions["minItems"], questions["maxItems"]) == (1, 4)
    item = questions["items"]
    assert item["required"] == ["question", "options"]
    assert (item["properties"]["options"]["minItems"], item["properties"]["options"]["maxItems"]) == (2, 6)
    assert item["properties"]["multi"]["type"] == "boolean"
    assert "Other" in tools[1].description and "typed:" in tools[1].description


def test_the_transcript_names_what_is_asked():
    asker = FakeAsker()
    assert ConfirmTool(asker).target({"question": "Delete\n the build dir?"}) == "Delete the build dir?"
    choose = ChooseTool(asker)
    one = {"question": "Which database?", "options": ["a", "b"]}
    assert choose.target({"questions": [one]}) == "Which database?"
    assert choose.target({"questions": [one, one, one]}) == "Which database? (+2 more)"
    assert choose.target({"questions": "nonsense"}) == ""


# ---- confirm -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("picked", "result"), [("Yes", "yes"), ("No", "no")])
async def test_confirm_asks_yes_or_no_without_other_and_answers_yes_or_no(picked, result):
    asker = FakeAsker(Answer((picked,)))
    answer = await toolbox(asker).call("confirm", {"question": "Overwrite notes.md?"})
    assert (answer.content, answer.is_error) == (result, False)
    assert asker.asked == [(Question("Overwrite notes.md?", ("Yes", "No"), multi=False, other=False),)]


async def test_a_declined_confirm_is_an_error_result_the_model_reads():
    answer = await toolbox(FakeAsker(declined=True)).call("confirm", {"question": "Go on?"})
    assert (answer.content, answer.is_error) == (DECLINED_TO_ANSWER, True)
    assert DECLINED_TO_ANSWER == "The user declined to answer."


@pytest.mark.parametrize("args", [{}, {"question": ""}, {"question": "   "}, {"question": 3}])
async def test_confirm_without_a_question_is_refused_before_asking(args):
    asker = FakeAsker()
    answer = await toolbox(asker).call("confirm", args)
    assert answer.is_error and answer.content.startswith("missing required argument: question")
    assert asker.asked == []


# ---- choose ------------------------------------------------------------------------------------

async def test_choose_asks_every_question_in_order_and_writes_one_line_per_answer():
    asker = FakeAsker(Answer(("PostgreSQL",)), Answer(("lint", "tests")), Answer(typed="8443"),
                      Answer(("lint",), typed="type checks"))
    questions = [
        {"question": "Which database?", "options": ["PostgreSQL", "SQLite"]},
        {"question": "Which checks?", "options": ["lint", "tests", "bench"], "multi": True},
        {"question": "Which port?", "options": ["80", "443"], "multi": False},
        {"question": "Which  checks\nagain?", "options": [" lint ", "tests"], "multi": True},
    ]
    answer = await toolbox(asker).call("choose", {"questions": questions})
    assert not answer.is_error
    assert answer.content.splitlines() == [
        "Which database? → PostgreSQL",
        "Which checks? → lint, tests",
        "Which port? → typed: 8443",
        "Which checks again? → lint; typed: type checks",
    ]
    assert asker.asked == [(
        Question("Which database?", ("PostgreSQL", "SQLite")),
        Question("Which checks?", ("lint", "tests", "bench"), multi=True),
        Question("Which port?", ("80", "443")),
        Question("Which checks again?", ("lint", "tests"), multi=True),
    )]
    assert all(question.other for question in asker.asked[0])


async def test_a_declined_choose_is_an_error_result_the_model_reads():
    answer = await toolbox(FakeAsker(declined=True)).call(
        "choose", {"questions": [{"question": "Which?", "options": ["a", "b"]}]})
    assert (answer.content, answer.is_error) == ("The user declined to answer.", True)


def question(**changes) -> dict:
    return {"question": "Which?", "options": ["a", "b"], **changes}


@pytest.mark.parametrize(("questions", "message"), [
    (None, "missing required argument: questions (a list of 1 to 4 questions)"),
    ("[]", "questions must be a list of 1 to 4 question objects"),
    ([], "no questions: give 1 to 4"),
    ([question()] * 5, "too many questions: 5 given, at most 4"),
    ([question(), "Which?"], "question 2 must be an object with question, options and multi"),
    ([question(question="")], "question 1 has no question text"),
    ([{"options": ["a", "b"]}], "question 1 has no question text"),
    ([question(options="a, b")], "question 1: options must be a list of strings"),
    ([question(options=["a", 2])], "question 1: options must be a list of strings"),
    ([question(options=["only"])], "question 1 has 1 option: give 2 to 6"),
    ([question(), question(options=list("abcdefg"))], "question 2 has 7 options: give 2 to 6"),
    ([question(options=["a", " "])], "question 1 has an empty option"),
    ([question(options=["yes", "no", "yes"])], 'question 1 lists the option "yes" twice'),
    ([question(multi="yes")], "question 1: multi must be true or false"),
])
async def test_choose_argument_errors_are_one_line_error_results_and_nobody_is_asked(questions, message):
    asker = FakeAsker()
    args = {} if questions is None else {"questions": questions}
    answer = await toolbox(asker).call("choose", args)
    assert (answer.content, answer.is_error) == (message, True)
    assert asker.asked == []


# ---- which chats have the toolset --------------------------------------------------------------

@pytest.fixture
def project(tmp_path: Path, fake_home: Path) -> Path:
    # The person's own file: a project's file would not be trusted with a provider.
    (fake_home / ".iota.yaml").write_text(
        "providers:\n  fake: {type: openai, url: 'http://127.0.0.1:9', key: k}\n"
        "models:\n  m: {provider: fake, id: fake-model}\n"
        "agents:\n  chat: {model: m}\n  quiet: {model: m, tools: {ask: false}}\n")
    return tmp_path


@pytest.mark.parametrize(("agent", "interactive", "asker", "offered"), [
    ("chat", True, True, True),
    ("chat", False, True, False),   # a headless run (-m): nobody to ask
    ("quiet", True, True, False),   # `ask: false`
    ("chat", True, False, False),   # no way to the person was given
])
async def test_the_ask_tools_join_interactive_chats_that_have_a_way_to_ask(project, agent, interactive, asker,
                                                                         offered):
    loaded = settings.load(project)
    setup = prepare_chat(loaded, settings.find_agent(loaded, agent), project, interactive=interactive)
    setup.asker = FakeAsker() if asker else None
    async with setup.open_tools() as tools:
        names = {spec.name for spec in setup.request([], tools).tools}
    assert ({"confirm", "choose"} <= names) is offered
    assert offered or not names & {"confirm", "choose"}

"""The search over deferred tools: which of them a query of capability words finds, best first.

One search for both places that answer it: iota's own `search_tools` tool (iota.mcp.defer) and the
Responses API's `tool_search_call`, which iota answers itself (iota.providers.openresponses). It
reads only a tool's name, description and parameters, so it serves MCP tools and the specs sent to
a provider alike, and sits in the providers package, below MCP.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol, TypeVar

SEARCH_TOP_K = 5  # how many matches one search loads


class Searchable(Protocol):
    name: str
    description: str
    parameters: Any


T = TypeVar("T", bound=Searchable)


def search(query: str, tools: Iterable[T]) -> list[T]:
    """The tools that match `query`, best first: each word of it scores 2 in a tool's name, 1 in
    its description and 1 in its parameters' names and descriptions; ties go by name."""
    terms = query.lower().split()
    scored = []
    for tool in tools:
        name, description, parameters = tool.name.lower(), tool.description.lower(), parameter_text(tool.parameters)
        score = sum(2 * (term in name) + (term in description) + (term in parameters) for term in terms)
        if score:
            scored.append((-score, tool.name, tool))
    return [tool for _, _, tool in sorted(scored, key=lambda entry: entry[:2])]


def parameter_text(schema: Any) -> str:
    """What a schema says of its parameters, lowercased: property names and descriptions, into
    nested `properties` and `items` (so an option's description finds its tool)."""
    words: list[str] = []

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        properties = node.get("properties")
        if isinstance(properties, dict):
            for name, value in properties.items():
                words.append(str(name))
                if isinstance(value, dict):
                    if isinstance(value.get("description"), str):
                        words.append(value["description"])
                    walk(value)
        walk(node.get("items"))

    walk(schema)
    return " ".join(words).lower()

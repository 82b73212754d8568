"""What the tests of the `code` tools share: a file written with an age, and a call that must
succeed or be refused (the fixtures are in conftest.py)."""

from __future__ import annotations

import os


def write(path, content: str | bytes, mtime: int | None = None):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


async def ok(box, name, **args) -> str:
    result = await box.call(name, args)
    assert not result.is_error, result.content
    return result.content


async def refused(box, name, **args) -> str:
    result = await box.call(name, args)
    assert result.is_error, result.content
    return result.content

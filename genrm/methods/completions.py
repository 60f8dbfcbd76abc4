"""The text of a completion as TRL's trainers hand it to reward functions: a string (standard format) or a list of
assistant messages (conversational format), whose contents are strings or lists of parts. Light: no model library."""

from __future__ import annotations

from typing import Any


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or the content of its assistant messages (text parts), joined."""
    if isinstance(completion, str):
        return completion
    parts = []
    for message in completion or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return "".join(parts)

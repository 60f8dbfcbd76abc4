"""The rubric method's teachers: a teacher (:mod:`genrm.engine.teachers`) as a rubric reader of groups, which judges
through the same prompts, schema and parser as the reward server."""

from __future__ import annotations

from genrm.engine import Engine
from genrm.methods.rubric.readers import EngineReader, RubricReader


def teacher_reader(teacher: Engine) -> RubricReader:
    """The teacher as a rubric reader of groups (schema-constrained, one re-sample), named by its model."""
    return EngineReader(teacher, parse_retries=1, name=teacher.model)

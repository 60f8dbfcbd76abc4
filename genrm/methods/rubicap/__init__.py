"""The rubicap reward method (RubiCap): per-image rubrics of binary criteria, written from a committee of captioners
and the student's deficiencies, scored by a cheap judge into a severity-weighted pass rate; with the source's Likert
baselines as reward modes.

:mod:`.method` (the plug-in), :mod:`.models` (instance, rubric, answers, records), :mod:`.prompts` (what the judge is
sent), :mod:`.reading` (reading its answers), :mod:`.rewards` (the formulas), :mod:`.writer` (the rubric writer's
prompt, schema and the checks of its rubrics), :mod:`.scene_judge` (scripted captioners, writer and judge over
synthetic scenes, for tests and benchmarks).
"""

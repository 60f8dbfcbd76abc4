"""The balcap reward method (BalCapRL): precision of pointable, verified assertions, recall of the reference's
assertions, and linguistic quality, from one call per caption to a judge the user serves; three reward columns for
decoupled normalization (c-GDPO).

:mod:`.method` (the plug-in), :mod:`.models` (instance, answer, records), :mod:`.prompts` (what the judge is sent),
:mod:`.reading` (reading its answer), :mod:`.rewards` (the formulas, the length rules, b-CapScore), :mod:`.lengths`
(token counts), :mod:`.scene_judge` (a scripted judge over synthetic scenes, for tests and benchmarks).
"""

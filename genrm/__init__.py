"""genrm: the reward stack of generative reward models, in sub-packages by concern.

- :mod:`genrm.engine`: the judge engine (chat requests in, replies out: OpenAI-compatible HTTP, a checkpoint in
  process, a scripted fake) and the one spelling of a judge;
- the rubric method at the top level: instances and rubrics (:mod:`genrm.methods.rubric.models`,
  :mod:`genrm.methods.rubric.planning`), scoring prompts (:mod:`genrm.methods.rubric.prompts`) and their answer schema
  (:mod:`genrm.methods.rubric.answer_schema`), reading answers (:mod:`genrm.methods.rubric.judge_output`,
  :mod:`genrm.methods.rubric.answer_extraction`), judging (:mod:`genrm.methods.rubric.judges`), execution, format
  checks, aggregation and records (:mod:`genrm.methods.rubric.scoring`);
- :mod:`genrm.data`: judge-training data and teachers; :mod:`genrm.training`: SFT and RLVR of the judge;
  :mod:`genrm.evaluation`: the reliability table and the false-positive audit; :mod:`genrm.cli`: the ``genrm`` command.

The command-line entry point is ``genrm`` (or ``python -m genrm``); see ``genrm --help``. This package imports the
verifier library only; model libraries (torch, transformers, trl, peft) are imported where a model runs.
"""

__version__ = "0.1.0"

"""genrm: the reward stack of generative reward models, in sub-packages by concern.

- :mod:`genrm.engine`: the judge engine (chat requests in, replies out: OpenAI-compatible HTTP, a checkpoint in
  process, a scripted fake) and the one spelling of a judge;
- the rubric method at the top level: instances and rubrics (:mod:`genrm.schemas`, :mod:`genrm.rubric`), scoring
  prompts (:mod:`genrm.prompts`) and their answer schema (:mod:`genrm.output_schema`), reading answers
  (:mod:`genrm.judge_output`, :mod:`genrm.answer_extraction`), judging (:mod:`genrm.judge`), execution, format
  checks, aggregation and records (:mod:`genrm.scoring`);
- :mod:`genrm.data`: judge-training data and teachers; :mod:`genrm.training`: SFT and RLVR of the judge;
  :mod:`genrm.evaluation`: the reliability table and the false-positive audit; :mod:`genrm.cli`: the ``genrm`` command.

The command-line entry point is ``genrm`` (or ``python -m genrm``); see ``genrm --help``. This package imports the
verifier library only; model libraries (torch, transformers, trl, peft) are imported where a model runs.
"""

__version__ = "0.1.0"

"""genrm: the reward stack of generative reward models, in sub-packages by concern.

- :mod:`genrm.engine`: the judge engine (chat requests in, replies out: OpenAI-compatible HTTP, a checkpoint in
  process, a scripted fake), a judge in one spelling (an engine, or none: ``rule``), images;
- :mod:`genrm.methods`: reward methods as plug-ins (the interface, the registry, the driver, scoring a file), and the
  methods, one package each: :mod:`genrm.methods.rubric` (instances and rubrics, prompts, answer schema, judges,
  reading, execution, aggregation, scoring, its judge's training data: the synthetic set, teacher rubrics and labels);
- :mod:`genrm.training`: SFT and RLVR of any method's judge; :mod:`genrm.evaluation`: the reliability table and the
  false-positive audits; :mod:`genrm.cli`: the ``genrm`` command (``genrm data ...`` drives each method's data).

The command-line entry point is ``genrm`` (or ``python -m genrm``); see ``genrm --help``. This package imports the
verifier library only; model libraries (torch, transformers, trl, peft) are imported where a model runs.
"""

__version__ = "0.1.0"

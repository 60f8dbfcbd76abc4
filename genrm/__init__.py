"""genrm: rubric schemas, judge prompts, output parsing, execution and aggregation for generative reward models.

The command-line entry point is ``genrm`` (or ``python -m genrm``); see ``genrm --help``. This package imports the
verifier library only; model libraries (torch, transformers, trl, peft) are imported where a model runs.
"""

__version__ = "0.1.0"

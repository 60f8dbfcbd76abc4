"""Measuring a judge: the reliability table (:mod:`genrm.evaluation.reliability`) and the false-positive audit (its
set in :mod:`genrm.evaluation.audit_set`, abnormal responses built by rules in
:mod:`genrm.evaluation.audit_constructors` and by models in :mod:`genrm.evaluation.audit_llm`, the run and report in
:mod:`genrm.evaluation.audit_run`)."""

#: Example groups judged at once by default (``genrm eval``, ``genrm audit run``): their requests meet in the batches
#: of a judge in process and are in flight together to a served one. Here, light, so that the command line's parsers
#: read it without importing the evaluation code.
DEFAULT_CONCURRENCY = 8

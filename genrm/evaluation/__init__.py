"""Measuring a judge: the reliability table (:mod:`genrm.evaluation.reliability`) and the false-positive audit (its
set in :mod:`genrm.evaluation.audit_set`, abnormal responses built by rules in
:mod:`genrm.evaluation.audit_constructors` and by models in :mod:`genrm.evaluation.audit_llm`, the run and report in
:mod:`genrm.evaluation.audit_run`)."""

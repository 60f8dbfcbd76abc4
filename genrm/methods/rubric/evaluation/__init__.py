"""Measuring a rubric judge: the reliability table and each answer's checks (:mod:`.reliability`, :mod:`.answers`)
and the false-positive audit (its set in :mod:`.audit_set`, abnormal responses built by rules in
:mod:`.audit_constructors` and by models in :mod:`.audit_llm`, the run and report in :mod:`.audit_run`)."""

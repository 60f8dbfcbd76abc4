"""Measuring a judge, whatever its method: the response audit of the methods whose instances hold a reference
(:mod:`genrm.evaluation.response_audit`), mining a record log for suspect rewards (:mod:`genrm.evaluation.mining`), the
caption evaluations (reference metrics, b-CapScore, question answering from captions, CapArena) and the pairwise
judge's figures. A method's own evaluation lives with it (the rubric method's reliability table and audit sets:
:mod:`genrm.methods.rubric.evaluation`)."""

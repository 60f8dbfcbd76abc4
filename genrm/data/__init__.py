"""Judge-training data made here: the synthetic set (:mod:`genrm.data.synthetic`), rubrics written by teacher models
(:mod:`genrm.data.teacher_rubrics`) and caption rubrics from a committee (:mod:`genrm.data.caption_rubrics`); any
method's labelled examples balanced and split by input (:mod:`genrm.data.examples`). A
method's own labelled examples, records and teacher labels are the method's (the rubric method's:
:mod:`genrm.methods.rubric.judge_data`, :mod:`genrm.methods.rubric.teacher_labels`)."""

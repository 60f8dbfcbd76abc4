"""Judge-training data: labelled judgements (:mod:`genrm.data.judge_data`), the synthetic set
(:mod:`genrm.data.synthetic`), and what teacher models write (:mod:`genrm.data.teachers`: rubrics in
:mod:`genrm.data.teacher_rubrics`, median labels in :mod:`genrm.data.teacher_labels`)."""

"""Each stage's parameter schema, one module per params.yaml section, as ``STAGE``.

:func:`guimem.pipeline.params.find_stage` loads the one a notebook needs, so that a stage depends
on its own schema and the shared checking code (:mod:`guimem.pipeline.params`) only.
"""

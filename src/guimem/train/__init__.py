"""The actor's examples and how it learns from its own mistakes: demonstration steps paired with
the experience a memory retrieved for them (:mod:`~guimem.train.examples`), memories rebuilt in k
folds so that no training step reads its own episode (:mod:`~guimem.train.folds`), and DAgger's
rollouts labelled by the expert (:mod:`~guimem.train.dagger`).

Every example reads its memory through :class:`guimem.smg.reader.MemoryReader`; held-out examples
read what the retrieval evaluation saved. Any actor (``guimem.actors``) trains and is scored on these.
"""

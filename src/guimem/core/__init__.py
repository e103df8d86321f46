"""The bottom layer: the data model, the episode store, file I/O, the environment and policy interfaces.

Everything else imports from here; nothing here imports from another layer.
"""

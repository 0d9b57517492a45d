"""Sub-commands of the ``ucs`` CLI; each module exposes ``register(app)``."""

"""Real phones and real data: the ``adbutils`` device backend with the world's interface."""

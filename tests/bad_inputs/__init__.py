"""The bad-input corpus: every surface that reads outside data, with each bad case and its exact outcome."""

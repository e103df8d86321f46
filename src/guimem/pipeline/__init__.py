"""Running the notebooks as DVC stages: the papermill runner that scrubs run-to-run noise."""

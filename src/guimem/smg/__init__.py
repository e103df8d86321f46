"""The Subgoal-aware Memory Graph and its baselines: segmentation into subgoals, the success
judge, the graph, the memories and their retrieval."""

"""The miniature multimodal actor: config, model, features, the frozen policy, training."""

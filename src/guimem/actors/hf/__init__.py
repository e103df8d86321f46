"""Any Hugging Face vision-language model as an actor: answer parsing, prompts, the policy, a
tiny random model for tests."""

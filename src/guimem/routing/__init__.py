"""SwitchMem: choosing, step by step, whether the frozen actor sees its memory as text or as an
image, from the actor's own hidden states (layer analysis, probe, router). Empty for now."""

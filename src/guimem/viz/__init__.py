"""The shared look of every figure: style, colours per memory kind and modality, byte-stable PNGs."""

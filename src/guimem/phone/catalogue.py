"""What the synthetic phone can show, shared by its apps and its renderer: the canvas size, the
photo subjects and the stickers (label-free pictures told apart only by how they look)."""

LOGICAL_SIZE: tuple[int, int] = (180, 360)  # (width, height) of the layout canvas

PHOTO_SUBJECTS: tuple[str, ...] = (
    "beach", "mountain", "city", "forest", "sunset", "cat", "dog", "flower", "car", "boat",
    "snowman", "desert", "lake", "bridge", "moon", "cake", "balloons", "lighthouse",
)

STICKERS: tuple[str, ...] = (
    "heart", "star", "sun", "moon", "smile", "sad", "cloud", "bolt",
    "drop", "flower", "note", "diamond", "fire", "clover", "check", "gift",
)

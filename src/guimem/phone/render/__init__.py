"""Drawing the synthetic phone: primitives (text, icons, photos, stickers), whole screens in a theme,
and figures of its data.
"""

from guimem.phone.render.figures import ROLE_COLOURS, annotate, contact_sheet, dataset_summary_figure, pick_screens
from guimem.phone.render.primitives import (
    APP_COLOURS,
    ICON_GLYPHS,
    Box,
    Color,
    draw_icon,
    draw_picture,
    draw_text,
    fit_text,
    font,
)
from guimem.phone.render.screen import THEME_ACCENTS, WIDGET_KINDS, Theme, make_theme, render_layout

__all__ = [
    "APP_COLOURS", "ICON_GLYPHS", "ROLE_COLOURS", "THEME_ACCENTS", "WIDGET_KINDS", "Box", "Color", "Theme", "annotate",
    "contact_sheet", "dataset_summary_figure", "draw_icon", "draw_picture", "draw_text", "fit_text", "font",
    "make_theme", "pick_screens", "render_layout",
]

"""The six apps of the synthetic phone (Settings, Notes, Messages, Shop, Gallery, Clock), one module
each, the launcher and the interrupting popups, built with :mod:`guimem.phone.toolkit`.
"""

from guimem.phone.apps.clock import CITIES, ClockApp, alarm_id
from guimem.phone.apps.gallery import SHARE_GLYPHS, SHARE_TARGETS, GalleryApp
from guimem.phone.apps.launcher import APP_BY_NAME, APP_LIST, APPS, DECOY_APPS, build_launcher
from guimem.phone.apps.messages import CHAT_LINES, CONTACTS, MessagesApp, first_name
from guimem.phone.apps.notes import NOTE_BODIES, NOTE_TITLES, NotesApp
from guimem.phone.apps.popups import POPUPS, build_popup
from guimem.phone.apps.settings import FONT_SIZES, OTHER_APPS, RINGTONES, SETTING_INDEX, SettingsApp
from guimem.phone.apps.shop import CATALOG, PRODUCTS, ShopApp, price

__all__ = [
    "APPS", "APP_BY_NAME", "APP_LIST", "CATALOG", "CHAT_LINES", "CITIES", "CONTACTS", "DECOY_APPS", "FONT_SIZES",
    "NOTE_BODIES", "NOTE_TITLES", "OTHER_APPS", "POPUPS", "PRODUCTS", "RINGTONES", "SETTING_INDEX", "SHARE_GLYPHS",
    "SHARE_TARGETS", "ClockApp", "GalleryApp", "MessagesApp", "NotesApp", "SettingsApp", "ShopApp", "alarm_id",
    "build_launcher", "build_popup", "first_name", "price",
]

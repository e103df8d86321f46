"""Bad adb input, each with its exact outcome: ``uiautomator`` dumps, window sizes, screenshots and
settings given to :class:`guimem.real.device.DeviceEnv`. Refused input is a DataError naming its
field (no file: the device is the source); accepted input gives exactly the elements listed.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from PIL import Image

from guimem.core.data import DataError
from guimem.core.env import Task
from guimem.real.device import MAX_WINDOW_SIDE, DeviceEnv, parse_hierarchy

pytestmark = pytest.mark.bad_input

SIZE = (1080, 2400)
DEEP = 10_000  # nested nodes: far beyond Python's recursion limit


def dump(*nodes: str, prolog: str = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>") -> str:
    """A uiautomator dump holding ``nodes`` (each the attributes of one ``<node/>``)."""
    return prolog + "<hierarchy rotation='0'>" + "".join(f"<node {a}/>" for a in nodes) + "</hierarchy>"


def button(bounds: str) -> str:
    return f'text="OK" class="android.widget.Button" clickable="true" bounds="{bounds}"'


LAUGHS = ("<?xml version='1.0'?><!DOCTYPE hierarchy [<!ENTITY a 'lol'>"
          + "".join(f"<!ENTITY {chr(98 + i)} '{('&' + chr(97 + i) + ';') * 10}'>" for i in range(9))
          + "]><hierarchy><node text='&j;' clickable='true' bounds='[0,0][10,10]'/></hierarchy>")
EXTERNAL = ("<?xml version='1.0'?><!DOCTYPE hierarchy [<!ENTITY x SYSTEM 'file:///etc/passwd'>]>"
            "<hierarchy><node text='&x;' clickable='true' bounds='[0,0][10,10]'/></hierarchy>")
DEEP_DUMP = ("<hierarchy>" + "<node class='android.view.View' bounds='[0,0][1080,2400]'>" * DEEP
             + "<node text='in' clickable='true' bounds='[0,0][540,1200]'/>" + "</node>" * DEEP + "</hierarchy>")

# (case id, the dump, the window size, outcome: the field a DataError names, or [(id, bounds), ...] read)
HIERARCHY: list[tuple[str, Any, Any, str | list]] = [
    ("not_xml", "<hierarchy><node", SIZE, "hierarchy"),
    ("empty", "", SIZE, "hierarchy"),
    ("not_text", None, SIZE, "hierarchy"),
    ("undefined_entity", dump('text="&nope;" clickable="true" bounds="[0,0][10,10]"'), SIZE, "hierarchy"),
    ("billion_laughs", LAUGHS, SIZE, "hierarchy"),
    ("external_entity", EXTERNAL, SIZE, "hierarchy"),
    ("bare_doctype", "<!DOCTYPE hierarchy><hierarchy/>", SIZE, "hierarchy"),
    ("bounds_three_numbers", dump(button("[1,2,3,4]")), SIZE, "hierarchy.node[0].bounds"),
    ("bounds_words", dump(button("[a,b][c,d]")), SIZE, "hierarchy.node[0].bounds"),
    ("bounds_float", dump(button("[0.5,0][10,10]")), SIZE, "hierarchy.node[0].bounds"),
    ("bounds_unicode_digits", dump(button("[\u0661,0][10,10]")), SIZE, "hierarchy.node[0].bounds"),
    ("bounds_trailing_text", dump(button("[0,0][10,10]x")), SIZE, "hierarchy.node[0].bounds"),
    ("bounds_empty", dump(button("")), SIZE, "hierarchy.node[0].bounds"),
    ("negative_width", dump(button("[100,0][50,10]")), SIZE, "hierarchy.node[0].bounds"),
    ("negative_height", dump(button("[0,100][10,50]")), SIZE, "hierarchy.node[0].bounds"),
    ("beyond_32_bits", dump(button("[0,0][4294967296,10]")), SIZE, "hierarchy.node[0].bounds"),
    ("of_5000_digits", dump(button("[0,0][" + "9" * 5000 + ",10]")), SIZE, "hierarchy.node[0].bounds"),
    ("second_node_named", dump('class="android.view.View"', button("[9,9][1,1]")), SIZE, "hierarchy.node[1].bounds"),
    ("zero_width_window", dump(button("[0,0][10,10]")), (0, 2400), "window_size.width"),
    ("zero_height_window", dump(button("[0,0][10,10]")), (1080, 0), "window_size.height"),
    ("negative_window", dump(button("[0,0][10,10]")), (-1080, 2400), "window_size.width"),
    ("float_window", dump(button("[0,0][10,10]")), (1080.0, 2400), "window_size.width"),
    ("nan_window", dump(button("[0,0][10,10]")), (1080, float("nan")), "window_size.height"),
    ("huge_window", dump(button("[0,0][10,10]")), (MAX_WINDOW_SIDE + 1, 2400), "window_size.width"),
    ("string_window", dump(button("[0,0][10,10]")), ("1080", "2400"), "window_size.width"),
    ("bool_window", dump(button("[0,0][10,10]")), (True, 2400), "window_size.width"),
    ("window_of_one_number", dump(button("[0,0][10,10]")), (1080,), "window_size"),
    ("window_none", dump(button("[0,0][10,10]")), None, "window_size"),
    # text no codec reads: the declared encoding unknown, multi-byte, not a text codec, or a lone surrogate
    ("encoding_unknown", dump(button("[0,0][10,10]"), prolog="<?xml version='1.0' encoding='bogus'?>").encode(), SIZE,
     "hierarchy"),
    ("encoding_mbcs", dump(button("[0,0][10,10]"), prolog="<?xml version='1.0' encoding='mbcs'?>").encode(), SIZE,
     "hierarchy"),
    ("encoding_utf7", dump(button("[0,0][10,10]"), prolog="<?xml version='1.0' encoding='utf-7'?>").encode(), SIZE,
     "hierarchy"),
    ("encoding_shift_jis", dump(button("[0,0][10,10]"), prolog="<?xml version='1.0' encoding='shift_jis'?>").encode(),
     SIZE, "hierarchy"),
    ("encoding_rot13", dump(button("[0,0][10,10]"), prolog="<?xml version='1.0' encoding='rot13'?>").encode(), SIZE,
     "hierarchy"),
    ("encoding_zlib", dump(button("[0,0][10,10]"), prolog="<?xml version='1.0' encoding='zlib'?>").encode(), SIZE,
     "hierarchy"),
    ("encoding_idna", dump(button("[0,0][10,10]"), prolog="<?xml version='1.0' encoding='idna'?>").encode(), SIZE,
     "hierarchy"),
    ("encoding_cp037", dump(button("[0,0][10,10]"), prolog="<?xml version='1.0' encoding='cp037'?>").encode(), SIZE,
     "hierarchy"),
    ("encoding_says_utf16_bytes_utf8", dump(button("[0,0][10,10]"), prolog="<?xml version='1.0' encoding='utf-16'?>")
     .encode(), SIZE, "hierarchy"),
    ("lone_surrogate_text", dump('text="\ud800" clickable="true" bounds="[0,0][10,10]"'), SIZE, "hierarchy"),
    ("invalid_utf8_bytes", dump(button("[0,0][10,10]")).encode().replace(b"OK", b"\xff\xfe"), SIZE, "hierarchy"),
    ("bytearray_dump", bytearray(dump(button("[0,0][10,10]")).encode()), SIZE, "hierarchy"),
    # accepted: an encoding declared and used, or declared in text already decoded
    ("latin1_declared_and_used", dump('text="caf\xe9" clickable="true" bounds="[0,0][540,1200]"',
                                      prolog="<?xml version='1.0' encoding='latin-1'?>").encode("latin-1"), SIZE,
     [("node0", (0.0, 0.0, 0.5, 0.5))]),
    ("utf16_declared_and_used", dump(button("[0,0][540,1200]"), prolog="<?xml version='1.0' encoding='utf-16'?>")
     .encode("utf-16"), SIZE, [("node0", (0.0, 0.0, 0.5, 0.5))]),
    ("unknown_encoding_in_decoded_text", dump(button("[0,0][540,1200]"), prolog="<?xml version='1.0' encoding='bogus'?>"),
     SIZE, [("node0", (0.0, 0.0, 0.5, 0.5))]),
    # accepted: clipped, skipped or read exactly
    ("wholly_off_screen", dump(button("[0,2400][1080,2600]")), SIZE, []),
    ("zero_sized", dump(button("[5,5][5,50]")), SIZE, []),
    ("partly_off_screen", dump(button("[-540,-1200][540,1200]")), SIZE, [("node0", (0.0, 0.0, 0.5, 0.5))]),
    ("one_pixel_window", dump(button("[0,0][1,1]")), (1, 1), [("node0", (0.0, 0.0, 1.0, 1.0))]),
    ("spaces_in_bounds", dump(button("[ 0 , 0 ][ 540 , 1200 ]")), SIZE, [("node0", (0.0, 0.0, 0.5, 0.5))]),
    ("bytes_dump", dump(button("[0,0][540,1200]")).encode("utf-8"), SIZE, [("node0", (0.0, 0.0, 0.5, 0.5))]),
    ("deep_nesting", DEEP_DUMP, SIZE, [(f"node{DEEP}", (0.0, 0.0, 0.5, 0.5))]),
]


@pytest.mark.parametrize("xml, size, outcome", [pytest.param(x, s, o, id=i) for i, x, s, o in HIERARCHY])
def test_dump_has_its_exact_outcome(xml, size, outcome):
    if isinstance(outcome, list):
        assert [(e.id, e.bounds) for e in parse_hierarchy(xml, size)] == outcome
        return
    with pytest.raises(DataError) as err:
        parse_hierarchy(xml, size)
    assert err.value.field == outcome and err.value.path is None


# ----------------------------------------------------------------------------- the environment
class Device:
    """Just enough of an adb device: a window size, a screenshot and a dump, as given."""

    def __init__(self, size: Any = SIZE, screenshot: Any = None, xml: str = dump(button("[0,0][540,1200]"))):
        self._size, self._xml = size, xml
        self._screenshot = Image.new("RGB", SIZE) if screenshot is None else screenshot

    def window_size(self) -> Any:
        return self._size

    def screenshot(self) -> Any:
        return self._screenshot

    def dump_hierarchy(self) -> str:
        return self._xml

    def keyevent(self, key_code: int) -> None:
        pass


def observe(device: Device, **settings: Any) -> Any:
    env = DeviceEnv(device, sleep=lambda s: None, **settings)
    return env.reset(Task(goal="look"), 0)


# (case id, what to run, outcome: the field a DataError names, or what the run returns)
ENV: list[tuple[str, Callable[[], Any], Any]] = [
    ("window_zero", lambda: observe(Device(size=(0, 0))), "window_size.width"),
    ("window_not_a_pair", lambda: observe(Device(size="1080x2400")), "window_size"),
    ("screenshot_empty", lambda: observe(Device(screenshot=Image.new("RGB", (0, 0)))), "screenshot"),
    ("screenshot_bytes", lambda: observe(Device(screenshot=b"\x89PNG")), "screenshot"),
    ("image_width_zero", lambda: observe(Device(), image_width=0), "image_width"),
    ("max_steps_zero", lambda: observe(Device(), max_steps=0), "max_steps"),
    ("settle_nan", lambda: observe(Device(), settle_s=float("nan")), "settle_s"),
    ("package_key_a_number", lambda: observe(Device(), packages={1: "com.x"}), "packages[1]"),
    ("package_blank", lambda: observe(Device(), packages={"Mail": " "}), "packages['Mail']"),
    ("packages_a_list", lambda: observe(Device(), packages=["Mail"]), "packages"),
    # accepted: a screenshot far wider than high keeps one row when resized
    ("very_wide_screenshot", lambda: observe(Device(screenshot=Image.new("RGB", (10_000, 1))), image_width=100).image.size,
     (100, 1)),
]


@pytest.mark.parametrize("run, outcome", [pytest.param(r, o, id=i) for i, r, o in ENV])
def test_device_input_has_its_exact_outcome(run, outcome):
    if not isinstance(outcome, str):
        assert run() == outcome
        return
    with pytest.raises(DataError) as err:
        run()
    assert err.value.field == outcome and err.value.path is None


def test_the_corpus_is_large_and_unique():
    ids = [case[0] for case in HIERARCHY + ENV]
    assert len(ids) == len(set(ids)) and len(ids) >= 10

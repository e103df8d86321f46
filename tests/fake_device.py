"""A fake Android device for the adb backend's tests and the recorder's: it implements the adbutils
methods :class:`guimem.real.device.DeviceEnv` uses, serves one fixed UI tree and records every call."""

from __future__ import annotations

from collections import namedtuple

from PIL import Image

from guimem.real.device import DeviceEnv

WindowSize = namedtuple("WindowSize", "width height")  # what adbutils returns

XML = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0">
  <node index="0" text="" resource-id="" class="android.widget.FrameLayout" content-desc="" clickable="false" bounds="[0,0][1080,2400]">
    <node index="0" text="Settings" resource-id="android:id/title" class="android.widget.TextView" content-desc="" clickable="false" bounds="[40,100][400,180]" />
    <node index="1" text="" resource-id="com.x:id/more" class="android.widget.ImageButton" content-desc="More options" clickable="true" bounds="[960,100][1080,220]" />
    <node index="2" text="Wi-Fi" resource-id="" class="android.widget.Switch" content-desc="" clickable="true" bounds="[0,300][1080,420]" />
    <node index="3" text="" resource-id="" class="android.view.View" content-desc="" clickable="false" bounds="[0,420][1080,500]" />
    <node index="4" text="Gone" resource-id="" class="android.widget.TextView" content-desc="" clickable="false" bounds="[0,2400][1080,2400]" />
    <node index="5" text="Wide" resource-id="" class="android.widget.Button" content-desc="" clickable="true" bounds="[-20,2300][1200,2500]" />
  </node>
</hierarchy>"""


class FakeDevice:
    """Implements the adbutils methods DeviceEnv uses and records every call."""

    def __init__(self, xml: str = XML):
        self.calls: list[tuple] = []
        self.xml = xml
        self.shade = 0

    def window_size(self):
        return WindowSize(1080, 2400)

    def screenshot(self):
        return Image.new("RGBA", (1080, 2400), (self.shade, 100, 200, 255))

    def dump_hierarchy(self):
        return self.xml

    def click(self, x, y):
        self.calls.append(("click", x, y))
        self.shade += 1

    def swipe(self, sx, sy, ex, ey, duration=1.0):
        self.calls.append(("swipe", sx, sy, ex, ey, duration))

    def send_keys(self, text):
        self.calls.append(("send_keys", text))

    def keyevent(self, key_code):
        self.calls.append(("keyevent", key_code))

    def app_start(self, package_name, activity=None):
        self.calls.append(("app_start", package_name))


def env(**kw) -> tuple[DeviceEnv, FakeDevice]:
    dev = FakeDevice()
    return DeviceEnv(dev, packages={"Settings": "com.android.settings"}, settle_s=0.0, sleep=lambda s: None, **kw), dev

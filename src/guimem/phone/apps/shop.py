"""The Shop app: categories of products with fixed prices, product pages, a cart and checkout,
orders, a wishlist, deals, and settings under the account tab.
"""

from __future__ import annotations

import random
from typing import Callable, Sequence

from guimem.phone.apps.base import App, info_page, operation, overlay, screen
from guimem.phone.toolkit import TABS_TOP, Builder, Cmd, Entry, Page, PhoneState, View, W, Widget, slug, stable_int


CATALOG: dict[str, tuple[str, ...]] = {
    "Fruit": ("Apples", "Bananas", "Cherries", "Grapes", "Lemons", "Mangoes", "Oranges", "Pears", "Plums", "Strawberries"),
    "Dairy": ("Butter", "Cheese", "Cream", "Eggs", "Milk", "Yogurt"),
    "Bakery": ("Bagels", "Baguette", "Croissants", "Muffins", "Rolls", "Sourdough"),
    "Drinks": ("Coffee", "Juice", "Lemonade", "Soda", "Tea", "Water"),
    "Snacks": ("Chips", "Cookies", "Crackers", "Nuts", "Popcorn", "Pretzels"),
    "Household": ("Batteries", "Candles", "Soap", "Sponges", "Tissues"),
}
PRODUCTS: tuple[str, ...] = tuple(p for items in CATALOG.values() for p in items)


def price(item: str) -> str:
    """A fixed price per product."""
    return f"${1 + stable_int('price', item) % 9}.{stable_int('cents', item) % 100:02d}"


class ShopApp(App):
    key, name, root = "shop", "Shop", "shop/home"
    search_screens = frozenset({"search"})
    TABS = (("Shop", "shop/home"), ("Deals", "shop/deals"), ("Account", "shop/account"))
    TOGGLE_SECTIONS = {"appearance": (("dark_mode", "Dark mode"), ("compact_list", "Compact list")),
                       "notifications": (("deal_alerts", "Deal alerts"), ("order_updates", "Order updates"))}

    def init_data(self, rng: random.Random) -> dict:
        cart = {p: rng.randint(1, 3) for p in rng.sample(PRODUCTS, rng.randint(0, 3))}
        prefs = {k: rng.random() < 0.5 for k in ("compact_list", "deal_alerts", "order_updates")}
        prefs["dark_mode"] = rng.random() < 0.25
        return {"prefs": prefs, "cart": cart, "wishlist": rng.sample(PRODUCTS, 2), "orders": [], "delivery": "Standard"}

    def on_push(self, page: Page, state: PhoneState) -> None:
        if page.screen == "shop/product":
            page.fields["qty"] = "1"

    def _cart_icon(self) -> tuple[str, str, Cmd]:
        return ("cart", "icon:cart", ("push", "shop/cart", ""))

    @screen
    def s_home(self, b: Builder, v: View) -> None:
        b.topbar("Shop", back=False, icons=[self._cart_icon()])
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        b.add(Widget("field:search", "field", (8, b.y + 3, W - 8, b.y + 26), sub="Search products", desc="Search products",
                     tap=("push", "shop/search", "")))
        b.y += 30
        self.nav_rows(b, v, [(c, f"row:{slug(c)}", ("push", "shop/category", c)) for c in CATALOG], row_h=32)

    def _product_rows(self, b: Builder, v: View, items: Sequence[str], add: bool = True, sub: Callable[[str], str] = price) -> None:
        row_h = 26 if v.data["prefs"]["compact_list"] else 32
        b.rows([Entry(f"item:{slug(p)}", p, sub=sub(p), glyph=f"dot:{p}", tap=("push", "shop/product", p),
                      trail=((f"icon:add:{slug(p)}", "plus", False, ("op", "add", p, 1)),) if add else ())
                for p in items], row_h=row_h)

    @screen
    def s_category(self, b: Builder, v: View) -> None:
        b.topbar(v.page.arg, icons=[self._cart_icon()])
        if v.page.note:
            b.text(v.page.note, style="sub")
        self._product_rows(b, v, CATALOG[v.page.arg])

    @screen
    def s_product(self, b: Builder, v: View) -> None:
        item = v.page.arg
        star = "star_filled" if item in v.data["wishlist"] else "star"
        b.topbar(item, icons=v.perm("product_toolbar", [(star, "icon:star", ("op", "wishlist", item)), self._cart_icon()]))
        b.picture(f"dot:{item}", 110)
        b.text(f"{item} · {price(item)}", big=True, h=22)
        y = b.y + 4
        qty = v.page.fields.get("qty", "1")
        b.add(Widget("icon:qty_minus", "icon", (40, y, 66, y + 26), glyph="minus", tap=("op", "qty", -1)))
        b.add(Widget("text:qty", "text", (80, y, 100, y + 26), text=qty, style="center big"))
        b.add(Widget("icon:qty_plus", "icon", (114, y, 140, y + 26), glyph="plus", tap=("op", "qty", 1)))
        b.y = y + 30
        b.button("btn:add_to_cart", "Add to cart", ("op", "add", item, 0))
        if v.page.note:
            b.text(v.page.note, style="center")

    @screen
    def s_search(self, b: Builder, v: View) -> None:
        b.topbar("Search", icons=[self._cart_icon()])
        b.field("field:search", "Search products")
        query = v.page.fields.get("query")
        if query is None:
            return
        hits = [p for p in PRODUCTS if query and query.lower() in p.lower()]
        if not hits:
            b.text("No products found", style="sub")
        self._product_rows(b, v, hits, add=False)

    @screen
    def s_cart(self, b: Builder, v: View) -> None:
        b.topbar("Cart")
        cart = v.data["cart"]
        if not cart:
            b.text("Your cart is empty", style="sub")
            return
        b.rows([Entry(f"item:{slug(p)}", p, sub=f"x{q} · {price(p)}", glyph=f"dot:{p}", tap=("push", "shop/product", p),
                      trail=((f"icon:remove:{slug(p)}", "trash", False, ("op", "remove", p)),)) for p, q in cart.items()],
               row_h=32, bottom=TABS_TOP - 40)
        b.y = TABS_TOP - 38
        b.button("btn:checkout", "Checkout", ("push", "shop/checkout", ""))

    @screen
    def s_checkout(self, b: Builder, v: View) -> None:
        b.topbar("Checkout")
        b.text("Deliver to: 12 Park Lane", style="sub")
        n = sum(v.data["cart"].values())
        b.text(f"{n} items", big=True)
        b.rows([Entry(f"radio:{slug(d)}", f"{d} delivery", kind="radio", on=v.data["delivery"] == d,
                      tap=("op", "delivery", d)) for d in v.perm("delivery", ("Standard", "Express"))])
        b.button("btn:place_order", "Place order", ("overlay", "shop/confirm_order", ""))

    @screen
    def s_order_done(self, b: Builder, v: View) -> None:
        b.topbar("Order placed", back=False)
        b.text(f"Thank you! Order #{len(v.data['orders'])} is on its way.", big=True, h=30)
        b.button("btn:continue", "Continue shopping", ("tab", "shop/home"), w=140)

    @screen
    def s_account(self, b: Builder, v: View) -> None:
        b.topbar("Account", back=False)
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        self.nav_rows(b, v, [("Orders", "row:orders", ("push", "shop/orders", "")),
                             ("Wishlist", "row:wishlist", ("push", "shop/wishlist", "")),
                             ("Settings", "row:settings", ("push", "shop/settings", "")),
                             ("Help", "row:help", info_page("shop", "Help"))], row_h=32)

    @screen
    def s_orders(self, b: Builder, v: View) -> None:
        b.topbar("Orders")
        orders = v.data["orders"]
        if not orders:
            b.text("No orders yet", style="sub")
        b.rows([Entry(f"item:order_{i + 1}", f"Order #{i + 1}", sub=f"{o['n']} items · {o['delivery']}",
                      tap=info_page("shop", f"Order #{i + 1}")) for i, o in enumerate(orders)])

    @screen
    def s_wishlist(self, b: Builder, v: View) -> None:
        b.topbar("Wishlist")
        self._product_rows(b, v, v.data["wishlist"], add=False)

    @screen
    def s_settings(self, b: Builder, v: View) -> None:
        b.topbar("Settings")
        self.nav_rows(b, v, [("Appearance", "row:appearance", ("push", "shop/appearance", "")),
                             ("Notifications", "row:notifications", ("push", "shop/notifications", "")),
                             ("Payment methods", "row:payment_methods", info_page("shop", "Payment methods")),
                             ("Addresses", "row:addresses", info_page("shop", "Addresses"))], row_h=32)

    @screen
    def s_appearance(self, b: Builder, v: View) -> None:
        b.topbar("Appearance")
        self.toggles(b, v, self.section_items(v.variant, "appearance"))

    @screen
    def s_notifications(self, b: Builder, v: View) -> None:
        b.topbar("Notifications")
        self.toggles(b, v, self.section_items(v.variant, "notifications"))

    @screen
    def s_deals(self, b: Builder, v: View) -> None:
        b.topbar("Deals", back=False, icons=[self._cart_icon()])
        b.tabs(v.perm("tabs", self.TABS), v.page.screen)
        self._product_rows(b, v, PRODUCTS[::6], add=False, sub=lambda p: f"-20% · {price(p)}")

    @overlay
    def o_confirm_order(self, b: Builder, v: View, arg: str) -> None:
        b.dialog("Place order?", f"{v.data['delivery']} delivery, paid by card.",
                 v.perm("confirm", [("Cancel", "btn:cancel", ("close",)), ("Place order", "btn:confirm", ("op", "order"))]))

    @operation
    def op_add(self, state: PhoneState, item: str, qty: int) -> None:
        n = qty or int(state.page.fields.get("qty", "1"))
        cart = state.data[self.key]["cart"]
        cart[item] = cart.get(item, 0) + n
        state.page.note = f"Added {n} {item}"

    @operation
    def op_qty(self, state: PhoneState, delta: int) -> None:
        page = state.page
        page.fields["qty"] = str(min(9, max(1, int(page.fields.get("qty", "1")) + delta)))
        page.note = ""

    @operation
    def op_remove(self, state: PhoneState, item: str) -> None:
        state.data[self.key]["cart"].pop(item, None)

    @operation
    def op_wishlist(self, state: PhoneState, item: str) -> None:
        wl = state.data[self.key]["wishlist"]
        wl.remove(item) if item in wl else wl.append(item)

    @operation
    def op_delivery(self, state: PhoneState, kind: str) -> None:
        state.data[self.key]["delivery"] = kind

    @operation
    def op_order(self, state: PhoneState) -> None:
        data = state.data[self.key]
        if data["cart"]:
            data["orders"].append({"items": dict(data["cart"]), "n": sum(data["cart"].values()), "delivery": data["delivery"]})
            data["cart"] = {}
            state.overlay = None
            state.stack = [state.stack[0], self.new_page("shop/order_done", "", state)]
        else:
            state.overlay = None


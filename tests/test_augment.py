"""Training steps with novel glyphs (guimem.actors.mini.augment): the bare icons of a world screen
are redrawn in designs no phone shows, a memory crop that showed one still shows it, the icons every
phone draws alike and everything else stay as they were, and a share of 0 changes nothing."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from guimem.actors.mini.augment import (
    FIXED_GLYPHS,
    _colours,
    _drawn_box,
    fixed_glyph,
    label_free_icons,
    novel_glyphs,
    redraw_inputs,
)
from guimem.actors.mini.features import ImagePatcher, pixel_alike
from guimem.actors.mini.train import TrainConfig
from guimem.core.data import Action, DataError, pixel_box
from guimem.core.policy import PolicyInput
from guimem.core.store import png_bytes
from guimem.phone.config import WorldConfig
from guimem.phone.tasks import TEMPLATES, make_task
from guimem.phone.world import World
from guimem.smg.memories import crop_slots, image_layout
from guimem.smg.memories.render import _crop
from guimem.train.examples import ActorExample

SIZE = (180, 405)  # the memory image's default size (params.yaml: graph_build.memory_image_*)


def world_screen(template: str = "notes.pin", variant: int | None = None, open_first: bool = False):
    """A screen of the synthetic phone with bare icons (a note open: the back arrow too), on the
    evaluation phone unless ``variant`` says otherwise."""
    config = WorldConfig(dialog_prob=0.0)
    world = World(config)
    variant = config.eval_variants[0] if variant is None else variant
    obs = world.reset(make_task(template, TEMPLATES[template].combos()[0]), seed=3, variant=variant)
    if open_first:
        row = next(e for e in obs.elements if e.role == "list_item")
        obs = world.step(Action("tap", point=row.center))[0]
    return obs.image.convert("RGB"), obs.elements


def memory_showing(shot: Image.Image, elements, indices, tmp_path) -> Image.Image:
    """A memory image whose strip shows the crops of ``elements[indices]`` cut from ``shot``, as
    the renderer cuts them (the screen part left grey)."""
    shot.save(tmp_path / "shot.png")
    canvas = Image.new("RGB", SIZE, (128, 128, 128))
    _, slots = image_layout(SIZE)
    for (x0, y0, x1, y1), i in zip(slots, indices):
        canvas.paste(_crop(str(tmp_path), "shot.png", elements[i].bounds, x1 - x0), (x0, y0))
    return canvas


def crops(image: Image.Image, boxes) -> "torch.Tensor":
    return ImagePatcher(max_cache=0).crops(image, boxes, 16)


def test_bare_icons_are_redrawn_and_the_memory_crop_that_showed_one_still_shows_it(tmp_path):
    shot, elements = world_screen()
    icons = label_free_icons(elements)
    assert len(icons) >= 2
    memory = memory_showing(shot, elements, icons[:1], tmp_path)
    inp = PolicyInput(shot, elements, "Pin a note", (), "1. succeeded | did: tap", memory)
    assert pixel_alike(crops(shot, [elements[icons[0]].bounds]), crops(memory, crop_slots(SIZE)))[0, 0] == 3

    new = novel_glyphs(inp, np.random.default_rng(0))
    boxes = [elements[i].bounds for i in icons]
    old_live, new_live = crops(shot, boxes), crops(new.screenshot, boxes)
    assert (pixel_alike(old_live, new_live).diag() < 3).all()  # every bare icon drawn anew
    new_memory = crops(new.memory_image, crop_slots(SIZE))
    assert pixel_alike(new_live[:1], new_memory)[0, 0] == 3  # the remembered crop shows the new drawing ...
    assert pixel_alike(old_live[:1], new_memory)[0, 0] < 3  # ... and no longer the old one
    assert (new.elements, new.goal, new.memory_text) == (inp.elements, inp.goal, inp.memory_text)
    assert png_bytes(inp.screenshot) == png_bytes(shot)  # the input itself is left as it was

    outside = np.ones(shot.size[::-1], dtype=bool)  # [h, w]: pixels outside every icon's box
    for i in icons:
        x0, y0, x1, y1 = pixel_box(elements[i].bounds, *shot.size)
        outside[y0:y1, x0:x1] = False
    assert (np.asarray(shot)[outside] == np.asarray(new.screenshot)[outside]).all()


def test_icons_every_phone_draws_alike_are_kept(tmp_path):
    shot, elements = world_screen(open_first=True)  # a note open: the back arrow at top left
    icons = label_free_icons(elements)
    found = {}
    for i in icons:
        box = _drawn_box(elements[i].bounds, *shot.size)
        found[i] = fixed_glyph(shot.crop(box), *_colours(shot, box))
    assert "back" in found.values() and None in found.values(), found
    new = novel_glyphs(PolicyInput(shot, elements, "Pin a note"), np.random.default_rng(1))
    for i in icons:
        same = pixel_alike(crops(shot, [elements[i].bounds]), crops(new.screenshot, [elements[i].bounds]))[0, 0] == 3
        assert same == (found[i] is not None)
    assert set(FIXED_GLYPHS) >= {"back", "close", "minus"}


def test_the_redrawing_is_seeded_and_a_screen_without_bare_icons_is_returned_as_it_is():
    shot, elements = world_screen()
    inp = PolicyInput(shot, elements, "Pin a note")
    a, b = (novel_glyphs(inp, np.random.default_rng(5)) for _ in range(2))
    assert png_bytes(a.screenshot) == png_bytes(b.screenshot)
    assert png_bytes(novel_glyphs(inp, np.random.default_rng(6)).screenshot) != png_bytes(a.screenshot)
    words_only = PolicyInput(shot, tuple(e for e in elements if e.role != "icon"), "Pin a note")
    assert novel_glyphs(words_only, np.random.default_rng(5)) is words_only


def test_redraw_inputs_draws_its_share_and_refuses_a_share_outside_0_1():
    shot, elements = world_screen()
    examples = [ActorExample(PolicyInput(shot, elements, f"goal {i}"), Action("back")) for i in range(40)]
    assert all(inp is ex.input for inp, ex in zip(redraw_inputs(examples, 0.0, seed=0), examples))
    assert all(inp is not ex.input for inp, ex in zip(redraw_inputs(examples, 1.0, seed=0), examples))
    half = sum(inp is not ex.input for inp, ex in zip(redraw_inputs(examples, 0.5, seed=0), examples))
    assert 10 <= half <= 30
    with pytest.raises(DataError, match="novel_glyphs"):
        list(redraw_inputs(examples, 1.5, seed=0))
    with pytest.raises(DataError, match="novel_glyphs"):
        TrainConfig(novel_glyphs=-0.1)


def test_train_actor_redraws_its_share_of_training_and_validation_steps_and_never_the_held_out(monkeypatch):
    import guimem.actors.mini.train as train_module
    from guimem.actors.mini.tiny import TINY

    shot, elements = world_screen()
    def examples(n, tag):
        return [ActorExample(PolicyInput(shot, elements, f"{tag} {i}"), Action("back")) for i in range(n)]
    seen = []
    real = train_module.redraw_inputs

    def spy(examples, share, seed, crop_size=16):
        seen.append(({ex.input.goal.split()[0] for ex in examples}, share))
        return real(examples, share, seed, crop_size)

    monkeypatch.setattr(train_module, "redraw_inputs", spy)
    config = TrainConfig(epochs=1, batch_size=4, min_count=1, model=TINY, novel_glyphs=0.5)
    train_module.train_actor(examples(4, "train"), config, seed=0, eval_examples=examples(2, "held"),
                             select_examples=examples(2, "val"), progress=False)
    assert seen == [({"train"}, 0.5), ({"val"}, 0.5)]

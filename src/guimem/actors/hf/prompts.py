"""The prompts a Hugging Face VLM actor reads: the system turn (action space, answer format,
coordinate convention) and the chat of one step.

The user turn is ordered so that what does not depend on the memory comes first: the goal, the
actions so far and the current screenshot, then the memory (as text, as an image, both or none),
then the question. Everything up to the screenshot is the step's **shared prefix**: the same tokens
whichever rendering of the memory follows, so a decoder can run it once and continue it with each
memory suffix on its KV cache (:meth:`guimem.actors.hf.policy.HFVLMActor.open_prefix`).
:data:`PREFIX_END` marks where the prefix ends in the chat-templated text.
"""

from __future__ import annotations

from typing import Any

from PIL import Image

from guimem.actors.hf.parsing import AnswerFormat, CoordConvention, Frame, format_action
from guimem.core.data import DataError
from guimem.core.policy import PolicyInput

_COORD_TEXT: dict[str, str] = {
    "relative_1000": "integers from 0 to 1000 on each axis, relative to the screenshot's width and height",
    "absolute_resized": "pixels of the screenshot as you see it",
    "absolute_original": "pixels of the screenshot",
    "normalized": "fractions from 0 to 1 of the screenshot's width and height",
}

_JSON_SPACE = """Answer with one JSON object and nothing else, one of:
{"action": "tap", "point": [x, y]}
{"action": "long_press", "point": [x, y]}
{"action": "swipe", "point": [x, y], "end": [x, y]}  (the finger moves from point to end)
{"action": "type", "text": "..."}  (types into the focused field)
{"action": "back"}
{"action": "home"}
{"action": "enter"}
{"action": "open_app", "text": "<app name>"}
{"action": "done"}  (the goal is reached)
{"action": "impossible"}  (the goal cannot be reached)"""

_UITARS_SPACE = """## Output Format
Thought: ...
Action: ...

## Action Space
click(start_box='(x,y)')
long_press(start_box='(x,y)')
type(content='')  # types into the focused field
scroll(start_box='(x,y)', direction='down or up or right or left')  # brings that side's content into view
drag(start_box='(x1,y1)', end_box='(x2,y2)')
open_app(app_name='')
press_back()
press_home()
press_enter()
finished()  # the goal is reached
impossible()  # the goal cannot be reached"""


def system_prompt(answer_format: AnswerFormat, coords: CoordConvention) -> str:
    """The system text: the task, the action space and the answer format."""
    space = _JSON_SPACE if answer_format == "json" else _UITARS_SPACE
    return ("You operate an Android phone to reach the user's goal. At each step you see the current "
            "screenshot, the goal, the actions taken so far and, sometimes, experience retrieved from "
            "earlier episodes. Choose the single next action.\n\n"
            f"{space}\n\nCoordinates (x, y) are {_COORD_TEXT[coords]}; (0, 0) is the top-left corner, "
            "x grows to the right and y downwards.")


PREFIX_END = "\x1f<guimem: end of the shared prefix>\x1f"
"""A text item :func:`build_messages` places after the screenshot when asked: the chat template
renders it verbatim, and the templated text is split there (:func:`split_at_prefix_end`)."""


def build_messages(inp: PolicyInput, system: str, answer_format: AnswerFormat, frame: Frame, show_frame: bool,
                   mark_prefix_end: bool = False) -> tuple[list[dict], list[Image.Image]]:
    """The chat (system + user turn) for one input and its images in the order they appear: the
    screenshot first (the shared prefix's one image), then the memory image if shown. With
    ``mark_prefix_end`` the user turn carries :data:`PREFIX_END` right after the screenshot."""
    history = "\n".join(f"{i + 1}. {format_action(a, answer_format, frame)}" for i, a in enumerate(inp.history))
    size = f" ({frame[0]:g} x {frame[1]:g} pixels)" if show_frame else ""
    content: list[dict[str, Any]] = [
        {"type": "text", "text": f"Goal: {inp.goal}\n"},
        {"type": "text", "text": f"Actions so far:\n{history or '(none)'}\n"},
        {"type": "text", "text": f"Current screen{size}:\n"},
        {"type": "image"},
    ]
    images: list[Image.Image] = [inp.screenshot.convert("RGB")]
    if mark_prefix_end:
        content.append({"type": "text", "text": PREFIX_END})
    if inp.memory_text is not None:
        content.append({"type": "text", "text": f"\nExperience from earlier episodes:\n{inp.memory_text}"})
    if inp.memory_image is not None:
        content.append({"type": "text", "text": "\nExperience from earlier episodes, as an image:\n"})
        content.append({"type": "image"})
        images.append(inp.memory_image.convert("RGB"))
    content.append({"type": "text", "text": "\nWhat is the next action?"})
    messages = [{"role": "system", "content": [{"type": "text", "text": system}]},
                {"role": "user", "content": content}]
    return messages, images


def split_at_prefix_end(text: str) -> tuple[str, str]:
    """A chat-templated prompt built with ``mark_prefix_end``, cut at :data:`PREFIX_END` (which is
    dropped): the shared prefix and the memory suffix. A template that dropped the marker or wrote it
    twice cannot be cut: a :class:`DataError` naming ``chat_template``."""
    parts = text.split(PREFIX_END)
    if len(parts) != 2:
        raise DataError("chat_template", f"the templated prompt holds the prefix marker {len(parts) - 1} times, "
                        "not once: the template must render every text item of the user turn verbatim")
    return parts[0], parts[1]

"""The prompts a Hugging Face VLM actor reads: the system turn (action space, answer format,
coordinate convention) and the chat of one step (goal, memory as text and/or image, history, screen).
"""

from __future__ import annotations

from typing import Any

from PIL import Image

from guimem.actors.hf.parsing import AnswerFormat, CoordConvention, Frame, format_action
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


def build_messages(inp: PolicyInput, system: str, answer_format: AnswerFormat,
                   frame: Frame, show_frame: bool) -> tuple[list[dict], list[Image.Image]]:
    """The chat (system + user turn) for one input, and its images in the order they appear."""
    content: list[dict[str, Any]] = [{"type": "text", "text": f"Goal: {inp.goal}\n"}]
    images: list[Image.Image] = []
    if inp.memory_text is not None:
        content.append({"type": "text", "text": f"Experience from earlier episodes:\n{inp.memory_text}\n"})
    if inp.memory_image is not None:
        content.append({"type": "text", "text": "Experience from earlier episodes, as an image:\n"})
        content.append({"type": "image"})
        images.append(inp.memory_image.convert("RGB"))
    history = "\n".join(f"{i + 1}. {format_action(a, answer_format, frame)}" for i, a in enumerate(inp.history))
    content.append({"type": "text", "text": f"Actions so far:\n{history or '(none)'}\n"})
    size = f" ({frame[0]:g} x {frame[1]:g} pixels)" if show_frame else ""
    content.append({"type": "text", "text": f"Current screen{size}:\n"})
    content.append({"type": "image"})
    images.append(inp.screenshot.convert("RGB"))
    content.append({"type": "text", "text": "\nWhat is the next action?"})
    messages = [{"role": "system", "content": [{"type": "text", "text": system}]},
                {"role": "user", "content": content}]
    return messages, images

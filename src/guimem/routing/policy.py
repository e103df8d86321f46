"""The frozen actor with SwitchMem in front of it: a :class:`~guimem.core.policy.Policy` that, per
step, routes the retrieved experience to the text or the image prompt and runs only that one.

    policy = SwitchMemPolicy(actor, router)          # router: guimem.routing.router.Router
    outputs = policy.act(inputs)                     # inputs carry the memory as text and as image
    outputs[0].info["modality"], outputs[0].info["route_score"]

Per step: the memory-free prompt's hidden state at its final token (the router's state), the
actor's embedding of each candidate (no decoder layer), the MLP, then the chosen prompt. An
input that carries only one rendering is shown that one; one that carries none, no memory. In
closed loop the reader renders both (``modality="both"``) and this policy chooses.

How much of the memory-free pass is repeated depends on the actor:

* a Hugging Face VLM whose chat template allows it (:attr:`~guimem.actors.hf.policy.HFVLMActor.shares_prefix`;
  :meth:`~guimem.actors.hf.policy.HFVLMActor.open_prefix`) runs the shared prefix (goal, actions so
  far, screenshot) once; the memory-free state costs only the question's
  few tokens on its cache, and the chosen memory suffix runs on the same cache: a routed step costs
  about one prompt;
* the miniature actor reads each input once (``featurise``) and runs the memory-free prompt and the
  chosen prompt in full: its memory comes before the screen's tokens, so nothing is shared.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from guimem.core.policy import Modality, PolicyInput, PolicyOutput, shows
from guimem.routing.router import Router


class SwitchMemPolicy:
    """``actor`` (the miniature actor, or any policy with ``act(..., output_hidden_states=True)`` and
    ``memory_embeddings``) routed by ``router`` at its calibrated τ (or ``tau``)."""

    def __init__(self, actor: Any, router: Router, tau: float | None = None, state_layer: int = -1):
        self.actor, self.router, self.state_layer = actor, router, state_layer
        self.tau = router.tau if tau is None else float(tau)
        self.batch_size = int(getattr(actor, "batch_size", 1))
        self.featurising = hasattr(actor, "featurise") and hasattr(actor, "act_features")
        self.sharing = bool(getattr(actor, "shares_prefix", False))  # a Hugging Face VLM whose template allows it

    def choose(self, inputs: Sequence[PolicyInput], feats: list | None = None,
               shared: Any = None) -> tuple[list[Modality], np.ndarray]:
        """The modality each input is routed to and its score ``r = q_I - q_T`` (NaN where not routed).
        ``feats`` are a featurising actor's features of ``inputs``; ``shared`` a prefix-sharing actor's
        open prefix of them (the memory-free state is then read on its cache)."""
        both = [i for i, x in enumerate(inputs) if shows(x, "both")]
        modalities: list[Modality] = ["text" if shows(x, "text") else "image" if shows(x, "image") else "none"
                                      for x in inputs]
        scores = np.full(len(inputs), np.nan)
        if both:
            if feats is not None:
                sub = [feats[i] for i in both]
                free = self.actor.act_features(sub, ["none"] * len(sub), output_hidden_states=True)
                states = np.stack([o.hidden_states for o in free])
                cand = {m: self.actor.memory_embeddings(sub, m) for m in ("text", "image")}
            else:
                sub_inputs = [inputs[i] for i in both]
                if shared is not None:  # every row's memory-free state (the cache holds them all), the routed ones kept
                    states = self.actor.continued_states(shared, [x.with_modality("none") for x in inputs])[both]
                else:
                    free = self.actor.act([x.with_modality("none") for x in sub_inputs], output_hidden_states=True)
                    states = np.stack([o.hidden_states for o in free])
                cand = {m: self.actor.memory_embeddings(sub_inputs, m) for m in ("text", "image")}
            state = states[:, self.state_layer]
            r = self.router.score(state, cand["text"], cand["image"])
            for j, i in enumerate(both):
                scores[i] = r[j]
            for j, image in enumerate(self.router.route(r, self.tau)):  # a NaN score or tau is refused there
                modalities[both[j]] = "image" if image else "text"
        return modalities, scores

    @property
    def reads_history_screens(self) -> bool:
        """Whether the actor it routes for reads the screens of its history (a miniature's ``history_words``)."""
        return bool(getattr(self.actor, "reads_history_screens", False))

    def act(self, inputs: Sequence[PolicyInput], output_hidden_states: bool = False) -> list[PolicyOutput]:
        """Route and answer every input; ``info`` carries ``modality`` and ``route_score``."""
        outputs: list[PolicyOutput] = []
        for lo in range(0, len(inputs), self.batch_size):
            chunk = list(inputs[lo:lo + self.batch_size])
            feats = [self.actor.featurise(x) for x in chunk] if self.featurising else None
            shared = self.actor.open_prefix(chunk) if self.sharing else None
            modalities, scores = self.choose(chunk, feats, shared)
            shown = [x.with_modality(m) for x, m in zip(chunk, modalities)]
            if feats is not None:
                answers = self.actor.act_features(feats, modalities, output_hidden_states)
            elif shared is not None:
                answers = self.actor.continue_prefix(shared, shown, output_hidden_states)
            else:
                answers = self.actor.act(shown, output_hidden_states)
            outputs += [PolicyOutput(o.action, o.hidden_states, o.raw,
                                     {**o.info, "modality": m, "route_score": None if np.isnan(s) else float(s)})
                        for o, m, s in zip(answers, modalities, scores)]
        return outputs

"""SwitchMem: choosing, step by step, whether the frozen actor sees its memory as text or as an
image, from the actor's own hidden states.

* :mod:`~guimem.routing.records` — the actor run under none / text / image / both at every step:
  hits, sampled preferences, hidden states of every layer at the final prompt token (on disk:
  ``[steps, layers + 1, d]`` per condition);
* :mod:`~guimem.routing.probe` — the preference probe on ``h_I - h_T`` and its layer curve;
* :mod:`~guimem.routing.router` — the shared MLP scorer ``q(state, candidate)`` and the label-free τ;
* :mod:`~guimem.routing.route_scores` — Table 1, random and heuristic baselines, oracle headroom,
  routing statistics;
* :mod:`~guimem.routing.policy` — the routed actor (:class:`~guimem.routing.policy.SwitchMemPolicy`):
  one memory-free forward, the scorer, then only the chosen memory prompt;
* :mod:`~guimem.routing.jobs` — step records on an executor, and the routed policy closed-loop plays load;
* :mod:`~guimem.routing.figures` — the figures of stages 06 to 09;
* :mod:`~guimem.routing.recipe` — SwitchMem's recipe on step records: probe, out-of-fold teacher,
  routers, then their scores on held-out steps;
* :mod:`~guimem.routing.trajectories` — the router's choices along whole trajectories, and 05's
  closed-loop conditions reused.
"""

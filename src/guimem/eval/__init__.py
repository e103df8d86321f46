"""Evaluation of any policy: step-level action matching (AITW and LearnGUI rules), the step-score
table, the closed loop in an environment (and both as executor work), and the tables beside the papers'.

Policies are known here only through :class:`guimem.core.policy.Policy`.
"""

"""The built-in synthetic phone: a UI toolkit, six apps, rendering, the subgoal library, task
templates, the world environment and the noisy scripted demonstrator."""

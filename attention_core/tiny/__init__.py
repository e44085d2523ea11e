"""The tiny transformer this app trains (lesson 2.3) and what is measured on it: the model, its training on the
tasks, evaluation, analysis, the causality probe, checkpoints and experiments. Public names import from
``attention_core``; the map of the modules is its docstring."""

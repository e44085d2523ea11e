"""The Playground's Qt views: steps, multi-head, inputs, editors, controls, and its undo commands."""

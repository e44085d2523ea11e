"""The Playground's Qt parts under its views: the Steps view, inputs, editors, controls, and its undo commands."""

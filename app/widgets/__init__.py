"""Shared Qt widgets: heatmap, head grid, export button, frame, theme, settings, workers. They never import a feature's
window (app.shell) or a CLI module."""

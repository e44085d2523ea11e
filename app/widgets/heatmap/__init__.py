"""One labelled heatmap (view) and its parts: axes, cell painting, colours, export."""

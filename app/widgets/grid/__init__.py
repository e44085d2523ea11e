"""The layer x head grid of attention maps (Training, Experiments, the Model tab) and what it paints over them."""

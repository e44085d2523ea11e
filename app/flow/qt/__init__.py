"""The Flow view's Qt widgets."""

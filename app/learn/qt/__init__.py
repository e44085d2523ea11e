"""Learn mode's Qt panel."""

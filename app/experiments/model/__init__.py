"""The Experiments tab's Qt-free evented model."""

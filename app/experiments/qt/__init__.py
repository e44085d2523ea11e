"""The Experiments tab's Qt views."""

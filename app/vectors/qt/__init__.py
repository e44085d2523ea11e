"""The Vectors tab's Qt views."""

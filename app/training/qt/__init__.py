"""The Training tab's Qt views."""

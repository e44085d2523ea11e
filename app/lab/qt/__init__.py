"""The Lab tab's Qt views."""

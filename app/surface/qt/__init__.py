"""The 3D tab's Qt widgets."""

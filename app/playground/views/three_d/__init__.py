"""3D: one step's map as a rotatable surface. model.py is Qt-free, view.py draws it (OpenGL)."""

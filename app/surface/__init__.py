"""3D: one step's map as a rotatable surface. model is Qt-free, qt/ draws it with OpenGL."""

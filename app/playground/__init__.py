"""The Playground: edit Q, K, V (or X and W) and watch the five steps. model/ is Qt-free, qt/ draws it."""

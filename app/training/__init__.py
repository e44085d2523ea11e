"""Training: train the tiny transformer and watch its heads. model/ is Qt-free, qt/ draws it, cli.py trains headless."""

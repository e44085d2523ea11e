"""The Lab: attention's cost measured. model is Qt-free, qt/ draws it, cli.py is `bench`."""

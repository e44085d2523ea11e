"""Learn mode: lessons over the real places. model/ is the Qt-free engine and format, qt/ the panel, cli.py
`lessons`."""

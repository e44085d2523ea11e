"""The main window and what knows it: tabs, presentation mode, screen fit, the Learn dock, start-up."""

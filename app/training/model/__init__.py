"""The Training tab's Qt-free evented model: session, history, results, status, tools, files, causality."""

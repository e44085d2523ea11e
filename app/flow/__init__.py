"""Flow: bertviz-style lines from queries to keys (Playground and Training). model is Qt-free, qt/ draws it."""

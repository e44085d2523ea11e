"""The Playground's Qt-free evented model: state, derived steps, texts, explanations, colour ranges, session files."""

"""Qt widgets of the playground. They display numbers computed elsewhere (``attention_core``); they never compute."""

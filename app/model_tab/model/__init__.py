"""The Model tab's Qt-free part: where models are found offline, the evented session (load, trace, pick a head,
hover) and how a real head becomes Playground inputs."""

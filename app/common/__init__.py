"""Qt-free pieces several features share: resource paths, export titles, CLI progress."""

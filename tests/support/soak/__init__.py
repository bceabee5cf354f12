"""The crash soak: its runner, its model of what the server must hold, and the reference
checks run between a kill and the restart (tests/soak)."""

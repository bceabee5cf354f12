"""Tables of the tree room (filled in as the room is built)."""

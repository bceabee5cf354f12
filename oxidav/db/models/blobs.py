"""Tables of the blobs room (filled in as the room is built)."""

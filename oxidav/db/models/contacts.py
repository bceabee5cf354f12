"""Tables of the contacts room (filled in as the room is built)."""

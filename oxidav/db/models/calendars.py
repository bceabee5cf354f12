"""Tables of the calendars room (filled in as the room is built)."""

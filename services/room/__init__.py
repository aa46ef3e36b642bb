"""The room: servers, the services as processes, bots, a progress line and a summary
(``studroom room``; the story is :mod:`.room`, the design docs/design/room.md)."""

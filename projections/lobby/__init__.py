"""The lobby: every table's public picture, in NATS KV bucket ``studroom_lobby``.

A projection of the public stream (never a hidden card): game, stakes, who sits where
with his stack, the running hand as spectators see it, and the last hour's figures.
``studroom serve lobby`` keeps it; ``studroom lobby`` and ``studroom watch TABLE``
show it at a terminal.  How and why: docs/design/lobby.md.
"""

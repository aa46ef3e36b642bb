"""Who may connect to the room's NATS and what each identity may publish and read.

See docs/design/trust.md: NATS operator mode, one account, identities by role.
"""

"""The cashier: players' accounts, buy-ins through a saga, cash-outs (``studroom serve
cashier``, ``studroom cashier ...``; the design is docs/design/cashier.md)."""

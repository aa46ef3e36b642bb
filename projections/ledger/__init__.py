"""The pot/rake ledger: where every chip that entered a table went."""

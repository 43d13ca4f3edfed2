"""What the studio announces (webhook events written in the same transaction as the change) and
their delivery to subscribers' URLs."""

"""Who may do what on Tephra's NATS: identities (NKeys), their permissions, credentials files, TLS."""

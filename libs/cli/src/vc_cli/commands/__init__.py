"""vcctl subcommands, one module per object kind."""

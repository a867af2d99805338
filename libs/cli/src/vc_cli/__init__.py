"""vcctl: the Tephra command-line tool."""

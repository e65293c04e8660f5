"""`mqctl migrate` and its subcommands: commands, options declared once, rendering."""

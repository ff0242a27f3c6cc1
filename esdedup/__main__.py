"""``python -m esdedup`` runs the command line."""
from esdedup_cli.main import run

run()

from esdedup_cli.main import run

run()

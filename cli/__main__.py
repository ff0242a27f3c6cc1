from esdedup_cli.start import run

run()

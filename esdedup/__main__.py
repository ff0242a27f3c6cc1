"""``python -m esdedup``: a shortcut to the command line (the same as ``esdedup`` or ``python -m esdedup_cli``).

Python runs this file only when asked to run the package as a program; the library never imports it, so
the library itself never imports the command line (tests/unit/test_layers.py checks both).
"""
from esdedup_cli.start import run

run()

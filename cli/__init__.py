"""The esdedup command line (installed as the ``esdedup_cli`` package; see ``esdedup --help``)."""

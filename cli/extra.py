"""Commands that live in their own modules register themselves on import here."""
from . import (
    kibana,  # noqa: F401  (esdedup kibana ...)
    quality,  # noqa: F401  (esdedup eval, esdedup synth)
)

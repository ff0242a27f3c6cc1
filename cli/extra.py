"""Commands that live in their own modules register themselves on import here."""

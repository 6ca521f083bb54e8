"""The ``cpu`` back end: gpuviz's own lockstep executor."""

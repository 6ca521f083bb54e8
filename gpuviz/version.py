"""The version of gpuviz, in a module of its own (no imports): the file format's writer (gpuviz.model) and the
capture's report of versions read it without importing the ``gpuviz`` package's front door, which imports the
capture and the runner."""

__version__ = "0.1.0"

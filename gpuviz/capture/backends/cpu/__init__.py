"""The ``cpu`` back end: gpuviz's own lockstep executor. A kernel compiled to lockstep numpy code (``compile.py``,
its tables in ``tables.py``) run by ``executor.py`` on its runtime (``runtime/``: every thread of a launch at once),
with its watchdog (``watchdog.py``) and the size estimate of a launch's trace (``estimate.py``); ``backend.py``
is its adapter to the :class:`~gpuviz.capture.backends.base.Backend` interface."""

"""The CPU executor: a kernel compiled to lockstep numpy code (``executor.py``) run on its runtime
(``runtime/``: every thread of a launch at once), with its watchdog (``watchdog.py``) and the size estimate of a
launch's trace (``estimate.py``)."""

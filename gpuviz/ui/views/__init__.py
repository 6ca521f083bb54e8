"""Docked views. Each module registers its views with :func:`gpuviz.ui.views.base.register_view`."""

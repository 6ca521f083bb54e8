"""The Qt front end: main window, session, views, actions, themes. Imports PySide6 and pyqtgraph."""

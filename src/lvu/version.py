"""lvu's version, in a module of its own: the engine, the importer and the frame cache record it
without importing the `lvu` package module, which sits above them (it exports the library's API)."""

__version__ = "0.1.0"

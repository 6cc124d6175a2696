"""lvu: long-video understanding benchmarks, run and scored under their official protocols."""

__version__ = "0.1.0"

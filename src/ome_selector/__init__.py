"""ome-selector: chooses a serving runtime for each OME InferenceService."""

__version__ = "0.1.0"

"""The helpers package."""

"""TEMPORARY frozen copy of the pre-optimisation parser, for the differential test. Delete when done."""

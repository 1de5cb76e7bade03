"""The user's lab: discovery (`starforge.yaml`), scaffolding, lock files, provenance and the files to pack."""

from .discovery import LAB_FILE, LabNotFound, find_root, find_root_or_none

__all__ = ["LAB_FILE", "LabNotFound", "find_root", "find_root_or_none"]

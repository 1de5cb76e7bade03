"""The user's lab: discovery (`starforge.yaml`), scaffolding, lock files, provenance and the files to pack."""

from .discovery import LAB_FILE, LabNotFound, find_root, find_root_or_none
from .provenance import GitProvenance, ProvenanceError, config_sha, git_provenance
from .scaffold import LabExists, ScaffoldError, init_lab

__all__ = [
    "LAB_FILE",
    "GitProvenance",
    "LabExists",
    "LabNotFound",
    "ProvenanceError",
    "ScaffoldError",
    "config_sha",
    "find_root",
    "find_root_or_none",
    "git_provenance",
    "init_lab",
]

"""Engine renderers: pure functions from an admitted JobSpec and the deployment's settings to an engine's own
documents (no HTTP, no database, no processes)."""

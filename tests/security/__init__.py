"""Reliability and security suite: real consoles on loopback under hostile input, races, kills and restarts."""

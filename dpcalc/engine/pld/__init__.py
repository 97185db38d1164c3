"""Tight numerical accounting with privacy loss distributions (certified brackets)."""

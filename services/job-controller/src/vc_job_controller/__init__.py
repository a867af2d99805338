"""Tephra vcjob controller."""

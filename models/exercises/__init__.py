"""Exercises: the student writes a piece of the reading path (a backward pass, attention, a
block, an optimizer step) and the project grades it (`microtensor exercises`; docs/exercises.md).

Read in this order: catalog.py (the list), stubs/ (what the student gets), grading.py (how a
check compares and explains), graders/ (the checks of each exercise), reference.py (the
answers, from the project's own code), workspace.py (writing a workspace, running its
graders).
"""
from .catalog import EXERCISES, Exercise, exercise
from .grading import ExerciseFailure, NotStarted

__all__ = ["EXERCISES", "Exercise", "ExerciseFailure", "NotStarted", "exercise"]

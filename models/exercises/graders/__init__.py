"""One grader per exercise: its checks (functions of the student's module that raise
ExerciseFailure or NotStarted) and its catalogue of plausible mistakes, which both give the
hints and prove the checks (tests/exercises)."""

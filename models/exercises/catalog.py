"""The exercises, in the order of the course (chapter 3, then training): number, the notes'
section, the student's file and functions, and the grader module.

The formula, shapes and hint of each one live in its stub (models/exercises/stubs/), the
file the student edits; its checks and mistakes in its grader (models/exercises/graders/).
"""
import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Exercise:
    number: int
    slug: str          # the stub's and grader's module name: ex03_softmax_backward
    title: str
    section: str       # the notes' section(s)
    functions: tuple   # what the student writes

    @property
    def filename(self):
        """The student's file, under the workspace's exercises/ folder."""
        return f"{self.slug}.py"

    @property
    def grader_filename(self):
        """The pytest file, under the workspace's graders/ folder."""
        return f"test_{self.slug}.py"

    @property
    def source(self):
        """Where the exercise comes from, as printed: "notes 3.2, 3.8", or "training, after
        the notes' chapter 3" for the one that no section of the notes covers."""
        if self.section[:1].isdigit():
            return f"notes {self.section}"
        return f"{self.section}, after the notes' chapter 3"

    def grader(self):
        return importlib.import_module(f"models.exercises.graders.{self.slug}")

    def stub_source(self):
        from importlib import resources

        return resources.files("models.exercises.stubs").joinpath(self.filename).read_text(
            encoding="utf-8")


EXERCISES = (
    Exercise(1, "ex01_unbroadcast", "un-broadcasting a gradient", "3.6, 3.8",
             ("unbroadcast",)),
    Exercise(2, "ex02_matmul_backward", "matmul backward (AᵀG, GVᵀ)", "3.8",
             ("matmul_backward",)),
    Exercise(3, "ex03_softmax_backward", "softmax backward", "3.2, 3.8",
             ("softmax_backward",)),
    Exercise(4, "ex04_layer_norm_backward", "layer norm backward", "3.6",
             ("layer_norm_backward",)),
    Exercise(5, "ex05_cross_entropy_backward", "cross-entropy backward", "3.7, 3.3",
             ("cross_entropy_backward",)),
    Exercise(6, "ex06_masked_fill", "masked fill, forward and backward", "3.3, 3.8",
             ("masked_fill", "masked_fill_backward")),
    Exercise(7, "ex07_attention", "scaled dot-product attention forward", "3.1–3.4",
             ("scaled_dot_product_attention",)),
    Exercise(8, "ex08_heads", "multi-head split and merge", "3.5",
             ("split_heads", "merge_heads")),
    Exercise(9, "ex09_pre_norm_block", "the pre-norm block", "3.6", ("pre_norm_block",)),
    Exercise(10, "ex10_kv_cache", "decoding with a KV cache", "3.7", ("attend_with_cache",)),
    Exercise(11, "ex11_adamw", "AdamW's step", "training", ("adamw_step",)),
)


def exercise(number):
    """The Exercise numbered `number`; ValueError naming the valid range otherwise."""
    for ex in EXERCISES:
        if ex.number == number:
            return ex
    raise ValueError(f"exercise number must be 1 to {len(EXERCISES)}; got {number}")

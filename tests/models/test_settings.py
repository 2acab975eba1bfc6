"""A run's settings are resolved in one place, settings.resolve_settings, with the precedence
its docstring states: a flag beats the preset, the preset beats the defaults, and on --resume
the checkpoint's settings stand in for the preset, only --max-iters free to change. Each value
below differs from every other source's, so a wrong order gives a wrong answer."""
import ast
import pathlib
from dataclasses import replace

import pytest

from models.training.settings import PRESETS, TrainConfig, TranslateConfig, resolve_settings

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_a_flag_beats_the_preset_and_the_preset_beats_the_defaults():
    assert (PRESETS["baby"].n_layer, PRESETS["tiny"].n_layer) == (4, 2), "the values below"
    assert resolve_settings(TrainConfig, "tiny", {"n_layer": 3}).n_layer == 3, "the flag's"
    assert resolve_settings(TrainConfig, "tiny", {}).n_layer == 2, "the preset's"
    assert resolve_settings(TrainConfig, None, {}).n_layer == 4, "the default preset's (baby)"
    assert resolve_settings(TrainConfig, "tiny", {"n_layer": None}).n_layer == 2, \
        "a flag not given (None) asks for nothing"
    assert resolve_settings(TranslateConfig, None, {"d_model": 32}).d_model == 32
    assert resolve_settings(TranslateConfig).d_model == TranslateConfig().d_model


# the checkpoint's: tiny with 3 layers, 10 steps planned, at iteration 5
SAVED = replace(PRESETS["tiny"], n_layer=3, max_iters=10)


def test_on_resume_the_checkpoints_settings_beat_the_preset_and_only_max_iters_may_change():
    resumed = resolve_settings(TrainConfig, None, {}, SAVED, at_iter=5)
    assert resumed == SAVED, "expected the checkpoint's settings (n_layer 3, not baby's 4)"
    longer = resolve_settings(TrainConfig, None, {"max_iters": 20, "n_layer": 3}, SAVED, 5)
    assert (longer.n_layer, longer.max_iters, longer.lr_decay_iters) == (3, 20, 10), \
        "expected the flag's --max-iters, the decay over the saved 10 steps kept"
    again = resolve_settings(TrainConfig, "tiny", {"n_layer": 3, "max_iters": 20}, SAVED, 5)
    assert again == longer, "expected the first command given again to resume the same"
    with pytest.raises(ValueError, match=r"^--n-layer 4 differs from the checkpoint's 3: "):
        resolve_settings(TrainConfig, None, {"n_layer": 4}, SAVED, 5)
    with pytest.raises(ValueError, match=r"^--preset tiny: --n-layer 2 differs from the "
                                         r"checkpoint's 3"):
        resolve_settings(TrainConfig, "tiny", {}, SAVED, 5)
    with pytest.raises(ValueError, match=r"^--max-iters 5: ckpt is at iter 5 already"):
        resolve_settings(TrainConfig, None, {"max_iters": 5}, SAVED, 5, checkpoint="ckpt")


def test_the_resolved_settings_are_checked_there():
    with pytest.raises(ValueError, match=r"^--n-embd 15 must be divisible by --n-head 2"):
        resolve_settings(TrainConfig, "tiny", {"n_embd": 15})
    with pytest.raises(ValueError, match=r"^unknown preset 'huge'"):
        resolve_settings(TrainConfig, "huge")
    with pytest.raises(ValueError, match=r"^unknown training settings \['n_layers'\]"):
        resolve_settings(TrainConfig, None, {"n_layers": 3})
    with pytest.raises(ValueError, match=r"^preset 'tiny': TranslateConfig has no presets"):
        resolve_settings(TranslateConfig, "tiny")


def test_only_settings_py_merges_and_checks_a_runs_settings():
    """Outside settings.py, resolve_settings is called by TrainingRun.settings (the trainers'
    one call) and by `graph --preset` alone, and no trainer or command calls .validate()
    (export's check of a checkpoint it reads, interop/nanogpt.py, is no run's settings)."""
    callers, validators = set(), set()
    for path in sorted((ROOT / "models").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                called = getattr(node.func, "id", getattr(node.func, "attr", None))
                if called == "resolve_settings":
                    callers.add(name)
                if called == "validate" and not node.args:
                    validators.add(name)
    assert callers == {"models/training/run.py", "models/cli/graph.py"}, callers
    assert validators <= {"models/training/settings.py", "models/interop/nanogpt.py"}, validators

"""Two fresh students' attempts at a green check without the work (cheats/, one file each, as
they wrote them): each reaches the reference, the engine's own piece or the grader by a road
the name-based fences do not see (an allowed module's `importlib`, `builtins`, `reload`, a file
read or written, a str subclass that lies to the checks, its own import system, a profiler
rebound, a signal to the grader). Each is refused, or fails, with its own message. And the
right answers they wrote in unusual ways (honest/: dataclasses, namedtuple, np.testing, a 0-d
result, Kahn's order ...) all pass."""
from pathlib import Path

import pytest

from models.exercises import exercise
from models.exercises.workspace import run_graders, start

CHEATS = Path(__file__).resolve().parent / "cheats"
HONEST = Path(__file__).resolve().parent / "honest"

# file: what its first message must say
EXPECTED = {
    "ex1_engine.py": "/microtensor/",
    "ex1_writes_conftest.py": "conftest.py for writing",
    "ex2_exit0.py": "ended (exit code 0)",
    "ex2_fake_output.py": "for writing",
    "ex2_kill_parent.py": "os.kill",
    "ex2_numpy_only.py": "/models/",
    "ex2_sysexit_in_call.py": "raised SystemExit",
    "ex3_builtins_eval.py": "compiled code from a string",
    "ex5_inspect_importlib.py": "/models/",
    "ex6_read_reference_source.py": "/models/",
    "ex7_reference_attention.py": "/models/",
    "ex7_reload_attention.py": "/nn/",
    "ex8_reload.py": "/nn/",
    "ex9_reload_block.py": "/nn/",
    "ex10_not_a_cache.py": "a cached step costs",
    "ex10_reload_kvcache.py": "/nn/",
    "ex11_typing_sys.py": "/models/",
    "ex12_attrgetter_sysmodules.py": "/models/",
    "ex13_reference.py": "/models/",
    "ex1_unbroadcast_own_import_system.py": "not a plain path",
    "ex7_strsubclass_read_exec.py": "not a plain path",
    "ex9_strsubclass_read_exec.py": "not a plain path",
    "ex10_fake_profile.py": "s of CPU, each step timed on its own; cached steps take",
    "ex13_bpe_merge_own_import_system.py": "not a plain path",
    "ex4_hardcoded.py": "raised KeyError",  # answers recorded for inputs a run no longer draws
    # issue 33: the grader's arrays zeroed through frames, then zeros returned (nothing a call
    # writes reaches the grader; since round five the frame itself is refused)
    "ex7_frames_zero_inputs.py": "called sys._getframe (from ex07_attention.py)",
    "ex10_frames_zero_inputs.py": "called sys._getframe (from ex10_kv_cache.py)",
    # code from a string compiled by the standard library, the clone's solutions read
    "ex3_codeop_compile_command.py": "compiled code from a string (<solution>)",
    "ex11_typing_forward_ref.py": "compiled code from a string",
    "ex5_reads_solutions.py": "/tests/exercises/solutions/ex05_cross_entropy_backward.py",
    # the pieces reached by another road: fenced where they live, as objects
    "ex7_tiled_attention_by_string.py": "your code called nn.tiled_attention",
    "ex7_tiled_attention_op_subclasses.py": "TiledAttention, the piece",
    "ex10_kvcache_subclasses.py": "your code called nn.KVCache",
    # issue 33, round five: frames, the guard's globals, a private compile helper, a classmate
    "ex1_frames_guard_ctypes.py": "called sys._getframe",
    "ex1_guard_globals_ctypes.py": "did ctypes.dlopen",
    "ex1_dataclasses_create_fn.py": "compiled code from a string (<string>)",
    "ex7_traceback_frame.py": "read .tb_frame",
    "ex13_writes_classmate.py": "victim/exercises/ex13_bpe_merge.py for writing",
    "ex13_os_open_classmate.py": "victim/exercises/ex13_bpe_merge.py for writing",
    "ex12_renames_itself_main.py": "your file imports sys",
    "ex3_guard_globals_import_fence.py": "your file imports inspect",
    # CPU burnt in the prompt: each step is timed on its own
    "ex10_burns_the_prompt.py": "s of CPU, each step timed on its own; cached steps take",
}


def test_every_cheat_on_file_has_an_expected_message():
    on_file = sorted(p.name for p in CHEATS.glob("ex*.py"))
    assert on_file == sorted(EXPECTED), f"cheats/ holds {on_file}; EXPECTED has {sorted(EXPECTED)}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_cheat_gets_no_green_check_and_its_own_message(tmp_path, name):
    result = _grade(tmp_path, name, CHEATS)
    root = tmp_path / "ws"
    assert result.status == "failed" and result.passed < result.total, (name, result.messages)
    assert EXPECTED[name] in result.messages[0], (
        f"{name}: expected {EXPECTED[name]!r} in the first message; got {result.messages[0]!r}")
    assert not (root / "conftest.py").exists(), f"{name} left a conftest.py in the workspace"


def test_check_reads_neither_a_conftest_nor_the_pytest_ini_of_the_workspace(tmp_path):
    """A conftest.py that turns every report into a pass, and a pytest.ini that only collects,
    change nothing `check` says: its verdicts are those of an untouched workspace."""
    root = start(tmp_path / "ws")
    (root / "conftest.py").write_text(
        "import pytest\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    r = (yield).get_result(); r.outcome, r.longrepr = 'passed', None\n",
        encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\naddopts = --collect-only\npythonpath = exercises\n",
                                     encoding="utf-8")
    results = run_graders(root, [1, 2])
    assert all(r.status == "not started" for r in results.values()), {
        n: (r.status, r.messages[:1]) for n, r in results.items()}


def _grade(tmp_path, name, folder):
    number = int(name[2:].split("_")[0])
    root = start(tmp_path / "ws")
    (root / "exercises" / exercise(number).filename).write_text(
        (folder / name).read_text(encoding="utf-8"), encoding="utf-8")
    return run_graders(root, [number])[number]


@pytest.mark.parametrize("name", sorted(p.name for p in HONEST.glob("ex*.py")))
def test_a_right_answer_written_another_way_passes_every_check(tmp_path, name):
    result = _grade(tmp_path, name, HONEST)
    assert result.status == "passed" and result.passed == result.total, (
        f"{name}: a right answer must pass; got {result.status}, {result.passed}/{result.total}:"
        f" {result.messages[:1]}")


def test_check_refuses_a_grader_file_the_student_edited(tmp_path):
    """A grader file runs in the grading process: one edited to skip its checks would pass a
    stub. `check` grades only with the file `start` wrote."""
    root = start(tmp_path / "ws")
    grader = root / "graders" / exercise(3).grader_filename
    text = grader.read_text(encoding="utf-8")
    assert "grade(3, check, __file__)" in text, text
    grader.write_text(text.replace("grade(3, check, __file__)", "pass"), encoding="utf-8")
    result = run_graders(root, [3])[3]
    assert result.status == "failed" and "was edited" in result.messages[0], result.messages


def test_numpys_stride_tricks_are_a_students_to_use():
    """np.lib holds sliding_window_view as well as the file readers: the readers are refused
    by name (np.lib.npyio), the rest of np.lib is not."""
    from models.exercises import guard

    ok = "import numpy as np\nview = np.lib.stride_tricks.sliding_window_view\n"
    assert guard.static_check(ok, "ex06_masked_fill.py", 6, False) is None
    bad = "import numpy as np\nread = np.lib.npyio.load\n"
    refusal = guard.static_check(bad, "ex06_masked_fill.py", 6, False)
    assert refusal and "reads or writes files" in refusal, refusal

"""Every notebook under docs/notebooks/ runs top to bottom without an error, and is stored without
outputs (CI runs them all with nbclient)."""
import pathlib

import pytest
from mt_testing import needs_dot

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))
SECTIONS = ["3_1", "3_2", "3_3", "3_4", "3_5", "3_6", "3_7", "3_8"]


@pytest.fixture(scope="module")
def kernel():
    """One Python kernel for all notebooks (starting one costs seconds); each notebook first
    clears its namespace, so a missing import still fails."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    client.stop_channels()
    yield manager
    manager.shutdown_kernel(now=True)


def test_every_course_section_the_gpt_walkthrough_and_the_encoder_decoder_have_a_notebook():
    stems = [p.stem for p in NOTEBOOKS]
    missing = [s for s in SECTIONS if not any(stem.startswith(s + "_") for stem in stems)]
    missing += [s for s in ("backprop_through_a_gpt", "encoder_decoder") if s not in stems]
    assert not missing, \
        f"expected a notebook per section 3.1–3.8, backprop_through_a_gpt and " \
        f"encoder_decoder, missing " \
        f"{missing}; have {stems}"


def _marked(path):
    """A notebook that shows a computation graph needs Graphviz's dot to render it."""
    draws = any(name in path.read_text(encoding="utf-8")
                for name in ("viz.draw_graph", "viz.backprop_frames"))
    return pytest.param(path, marks=needs_dot) if draws else path


@pytest.mark.parametrize("path", [_marked(p) for p in NOTEBOOKS], ids=lambda p: p.stem)
def test_the_notebook_runs_top_to_bottom_without_an_error(path, kernel):
    nb = nbformat.read(path, as_version=4)
    stored = [i for i, c in enumerate(nb.cells)
              if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not stored, f"expected {path.name} stored without outputs; cells {stored} have some"
    nb.cells.insert(0, nbformat.v4.new_code_cell("%reset -f"))
    nbclient.NotebookClient(nb, km=kernel, timeout=120, allow_errors=False).execute()
    shown = [o["data"] for c in nb.cells for o in c.get("outputs", [])
             if o.get("output_type") in ("execute_result", "display_data")]
    pictures = [d for d in shown if d.get("text/plain", "").startswith(("<graphviz", "<Figure"))]
    as_text = [d["text/plain"] for d in pictures if not {"image/svg+xml", "image/png"} & set(d)]
    assert not as_text, f"expected every picture in {path.name} shown inline, got text {as_text}"

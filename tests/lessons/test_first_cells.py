"""A lesson's first cells, as a learner runs them: the title and its Colab badge, the switch (off), and
the setup cell, which sets up the mode the switch chose and says which switch chose it."""

import pytest
from fakes import LESSONS, cells, printed

# a switch's values (its first one, as shipped) and the preset each one sets up
SWITCHES = {"FULL_MODE": {False: "quick", True: "seed"},
            "RECIPE": {"quick": "quick", "cpu": "cpu", "seed": "seed"}}


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_the_learners_switch_decides_the_mode_the_setup_cell_reports(path, monkeypatch, capsys):
    """The lesson opens on its title and Colab badge; the first code cell is the switch, off; the setup
    cell, run with each value of it, sets up that mode and says which switch chose it; the stored outputs
    name the lesson's own switch."""
    from IPython.core.inputtransformer2 import TransformerManager  # a %pip line made a call, as IPython does

    lesson = cells(path)
    assert "".join(lesson[0]["source"]).startswith(f"# Lesson {path.name[:2]} · ")
    assert f"/blob/main/notebooks/{path.name})" in "".join(lesson[0]["source"])  # its Colab badge opens it
    code = [cell for cell in lesson if cell["cell_type"] == "code"]
    switch_cell, setup_cell = (TransformerManager().transform_cell("".join(cell["source"])) for cell in code[:2])
    monkeypatch.delenv("SHIFTVIT_QUICK", raising=False)
    namespace = {"get_ipython": lambda: None}
    exec(switch_cell, namespace)
    (name, values), = [(name, values) for name, values in SWITCHES.items() if name in namespace]
    assert namespace[name] == next(iter(values)), "the switch ships off"
    for value, preset_name in values.items():
        namespace[name] = value
        exec(setup_cell, namespace)
        settings, shown = namespace["settings"], capsys.readouterr().out
        assert settings.preset_name == preset_name and settings.quick == (preset_name == "quick"), value
        assert f"(mode chosen by {name} = {value!r}" in shown, shown
    assert f"wins over {name})" in printed(code[1])  # run by the lesson runner (SHIFTVIT_QUICK=1)

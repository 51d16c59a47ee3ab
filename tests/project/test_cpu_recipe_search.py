"""scripts/cpu_recipe_search.py: candidates against the v1 recipe, and the table of their results."""

from fakes import load_script

from shiftvit_lib import preset

search = load_script("scripts/cpu_recipe_search.py")


def row(top1, changes=None, images_per_second=1000.0):
    return {"changes": changes or {}, "epochs": 8, "best_val_top1": top1, "train_images_per_second": images_per_second}


def test_the_baseline_is_the_recipe_before_the_search_not_todays_preset():
    # The preset gained the stem the search chose; the search's baseline must stay without it.
    assert preset("cpu").stem_channels == 32
    assert preset("cpu", **search.BASELINE).stem_channels == 0
    assert search.CANDIDATES["conv_stem_32"] == {"stem_channels": 32}


def test_table_ranks_by_validation_top1_with_the_gain_over_the_baseline_when_there_is_one():
    table = search.markdown_table({
        "baseline": row(0.70), "better": row(0.72, {"lr_max": 0.003}), "worse": row(0.65, images_per_second=500.0),
    })
    lines = table.splitlines()[2:]
    assert [line.split("`")[1] for line in lines] == ["better", "baseline", "worse"]
    assert "| lr_max=0.003 | 72.00 % | +2.00 | 1000 | 5.3 min |" in lines[0]
    assert "(the v1 cpu recipe) | 70.00 % | +0.00 |" in lines[1]
    assert "| -5.00 | 500 | 10.7 min |" in lines[2]  # 8 x 40,000 images at 500 images/s
    alone = search.markdown_table({"conv_stem_32": row(0.83, {"stem_channels": 32})})
    assert "| stem_channels=32 | 83.00 % | - |" in alone  # no baseline: no gain
